#!/usr/bin/env python3
"""A task's service for bench/proxy_bench.py, started by an agent in TensorBoard's place
(det-node --tensorboard=THIS): under --path_prefix it serves GET bytes?n=N (N zero bytes) and a
WebSocket echo at echo, so that the same server is measured directly and through the master's proxy."""

import argparse
import base64
import hashlib
import http.server
import socketserver
import struct
import urllib.parse

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--path_prefix", required=True)
parser.add_argument("--bind_all", action="store_true")
args, _ = parser.parse_known_args()
CHUNK = memoryview(bytes(1 << 20))


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_):
        pass

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path == args.path_prefix + "/bytes":
            n = int(urllib.parse.parse_qs(url.query)["n"][0])
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(n))
            self.end_headers()
            while n > 0:
                part = CHUNK[:min(n, len(CHUNK))]
                self.wfile.write(part)
                n -= len(part)
        elif url.path == args.path_prefix + "/echo" and self.headers.get("Upgrade", "").lower() == "websocket":
            self.echo()
        elif url.path.startswith(args.path_prefix + "/"):
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")
        else:
            self.send_error(404)

    def echo(self):
        accept = base64.b64encode(hashlib.sha1((self.headers["Sec-WebSocket-Key"] +
                                                "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.end_headers()
        self.wfile.flush()
        read = self.rfile.read
        while True:
            head = read(2)
            if len(head) < 2:
                return
            opcode, n = head[0] & 0x0F, head[1] & 0x7F
            if n == 126:
                n = struct.unpack("!H", read(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", read(8))[0]
            mask = read(4) if head[1] & 0x80 else b"\0\0\0\0"
            payload = bytes(b ^ mask[i % 4] for i, b in enumerate(read(n)))
            if opcode == 0x8:
                self.wfile.write(b"\x88\x00")
                return
            frame = bytes([0x80 | opcode]) + (bytes([n]) if n < 126 else bytes([126]) + struct.pack("!H", n)) + payload
            self.wfile.write(frame)
            self.wfile.flush()


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


Server(("0.0.0.0" if args.bind_all else "127.0.0.1", args.port), Handler).serve_forever()
