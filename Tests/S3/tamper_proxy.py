"""A proxy in front of the S3 server that lies about checksums, for the mismatch test.

Forwards every request to the store unchanged (method, path, headers, body; the signature stays
valid) and answers with the store's answer, except that the ETag of every PUT answer is replaced
by a wrong one: what a store that corrupted the object would say. Usage: tamper_proxy.py PORT UPSTREAM_PORT.
"""
import http.client
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT, UPSTREAM = int(sys.argv[1]), int(sys.argv[2])


class Proxy(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def forward(self):
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else None
        upstream = http.client.HTTPConnection("127.0.0.1", UPSTREAM, timeout=30)
        upstream.request(self.command, self.path, body=body, headers=dict(self.headers.items()))
        answer = upstream.getresponse()
        data = answer.read()
        self.send_response(answer.status)
        for name, value in answer.getheaders():
            lname = name.lower()
            if lname in ("transfer-encoding", "connection", "content-length", "server", "date"):
                continue
            if lname == "etag" and self.command == "PUT":
                value = '"00000000000000000000000000000000"'
            self.send_header(name, value)
        length = answer.getheader("content-length") if self.command == "HEAD" else None
        self.send_header("content-length", length or str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = forward

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", PORT), Proxy).serve_forever()
