#!/usr/bin/env python3
"""A fake remote document server and S3-compatible endpoint for Engram's knowledge-base tests
(Python 3 stdlib only).

Usage:
    python3 tests/support/fake_doc_server.py --root DIR [--access-key KEY] [--port N]

Once listening it prints exactly one line "LISTENING <port>" (flushed), then nothing. It records
nothing. SIGTERM or SIGINT stops it with exit code 0.

GET /redirect/<anything> -> 302 to /<anything> (redirects must not be followed by the server).
GET /s3/<bucket>/<key>   -> the file DIR/<bucket>/<key>, only with an AWS SigV4 Authorization
                            header ("AWS4-HMAC-SHA256 Credential=<KEY>/<date>/<region>/s3/
                            aws4_request, SignedHeaders=..., Signature=...") and an x-amz-date
                            header; otherwise 403. (The signature itself is not verified.)
GET /<path>              -> the file DIR/<path>, or 404.
Paths containing ".." -> 400.
"""
import argparse
import os
import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--access-key", default="AKIDTEST")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()
    root = os.path.abspath(args.root)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def send(self, code, body=b"", headers=()):
            self.send_response(code)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            path = unquote(self.path.split("?", 1)[0])
            if ".." in path.split("/"):
                return self.send(400, b"bad path")
            if path.startswith("/redirect/"):
                return self.send(302, b"", [("Location", path[len("/redirect"):])])
            if path.startswith("/s3/"):
                auth = self.headers.get("Authorization", "")
                prefix = "AWS4-HMAC-SHA256 Credential=" + args.access_key + "/"
                if (not auth.startswith(prefix) or "/s3/aws4_request" not in auth
                        or "Signature=" not in auth or not self.headers.get("x-amz-date")):
                    return self.send(403, b"<Error><Code>AccessDenied</Code></Error>")
                path = path[len("/s3"):]
            full = os.path.join(root, path.lstrip("/"))
            if not os.path.isfile(full):
                return self.send(404, b"not found")
            with open(full, "rb") as f:
                self.send(200, f.read())

    server = ThreadingHTTPServer((args.host, args.port), Handler)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    print("LISTENING %d" % server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except (KeyboardInterrupt, SystemExit):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
