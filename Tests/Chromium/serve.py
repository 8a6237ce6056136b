"""Serves this folder on 127.0.0.1 and writes the JSON a page POSTs to /result into RESULT_FILE.
   serve.py PORT RESULT_FILE"""
import http.server
import os
import sys

port, result_file = int(sys.argv[1]), sys.argv[2]
os.chdir(os.path.dirname(os.path.abspath(__file__)))


class Handler(http.server.SimpleHTTPRequestHandler):
    def do_POST(self):
        if self.path != "/result":
            self.send_error(404)
            return
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        tmp = result_file + ".tmp"
        with open(tmp, "wb") as f:
            f.write(body)
        os.replace(tmp, result_file)  # the runner sees the whole file or none
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
