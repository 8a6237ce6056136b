"""Serves this folder on 127.0.0.1 and writes the JSON a page POSTs to /result into RESULT_FILE;
   with MEDIA_DIR, /media/NAME is MEDIA_DIR/NAME (a recording for playback.html).
   serve.py PORT RESULT_FILE [MEDIA_DIR]"""
import http.server
import os
import sys

port, result_file = int(sys.argv[1]), sys.argv[2]
media_dir = os.path.abspath(sys.argv[3]) if len(sys.argv) > 3 else None
os.chdir(os.path.dirname(os.path.abspath(__file__)))


class Handler(http.server.SimpleHTTPRequestHandler):
    def translate_path(self, path):
        name = path.split("?", 1)[0]
        if media_dir and name.startswith("/media/"):
            # One plain name in the folder, nothing above it.
            return os.path.join(media_dir, os.path.basename(name))
        return super().translate_path(path)

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
