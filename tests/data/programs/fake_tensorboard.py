#!/usr/bin/env python3
"""Stands in for TensorBoard (which Debian does not package) in the tests: takes its flags
(--port=N --bind_all --path_prefix=P --logdir_spec SPEC ...) and serves, under P/, a page naming
the log directories it was given, as TensorBoard serves its UI under --path_prefix."""

import argparse
import http.server

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--path_prefix", required=True)
parser.add_argument("--logdir_spec", required=True)
parser.add_argument("--bind_all", action="store_true")
args, extra = parser.parse_known_args()


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if not self.path.startswith(args.path_prefix + "/"):
            self.send_error(404)
            return
        body = ("fake TensorBoard\n" + args.logdir_spec + "\n" + " ".join(extra) + "\n").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


http.server.ThreadingHTTPServer(("0.0.0.0" if args.bind_all else "127.0.0.1", args.port), Handler).serve_forever()
