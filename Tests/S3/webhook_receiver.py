"""A webhook receiver that verifies every delivery with the Standard Webhooks reference library.

Usage: webhook_receiver.py PORT SECRET_FILE LOG. Each POST is checked with
standardwebhooks.Webhook(secret).verify (signature and timestamp tolerance); a valid one is
answered 204 and appended to LOG as a JSON line {"id", "type", "data", "valid": true}; an invalid one
is answered 400 and logged with "valid": false, so the test sees every bad signature.
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook

PORT, SECRET, LOG = int(sys.argv[1]), open(sys.argv[2]).read().strip(), sys.argv[3]
hook = Webhook(SECRET)


class Receiver(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            payload = hook.verify(body, headers)
            line, status = {"id": headers["webhook-id"], "type": payload.get("type"), "data": payload.get("data"), "valid": True}, 204
        except Exception as error:  # the library's WebhookVerificationError and malformed input alike
            line, status = {"id": headers.get("webhook-id"), "valid": False, "error": str(error)}, 400
        with open(LOG, "a") as log:
            log.write(json.dumps(line) + "\n")
        self.send_response(status)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", PORT), Receiver).serve_forever()
