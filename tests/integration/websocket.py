"""A minimal WebSocket client (RFC 6455) for the tests and benchmarks: Debian's Python has none
under the pyenv interpreter. Text and binary messages, client-side masking, fragmented reads."""

import base64
import os
import socket
import ssl
import struct
import urllib.parse


class WebSocketError(Exception):
    pass


class WebSocket:
    def __init__(self, url, headers=None, ssl_context=None, timeout=30):
        """url: ws://host:port/path or wss://...; headers: extra request headers."""
        parts = urllib.parse.urlsplit(url)
        port = parts.port or (443 if parts.scheme == "wss" else 80)
        sock = socket.create_connection((parts.hostname, port), timeout=timeout)
        if parts.scheme == "wss":
            sock = (ssl_context or ssl.create_default_context()).wrap_socket(sock, server_hostname=parts.hostname)
        self.sock = sock
        self.buffer = b""
        key = base64.b64encode(os.urandom(16)).decode()
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        lines = [f"GET {path} HTTP/1.1", f"Host: {parts.hostname}:{port}", "Upgrade: websocket",
                 "Connection: Upgrade", f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        head = self._read_until(b"\r\n\r\n").decode(errors="replace")
        self.status = int(head.split(" ", 2)[1])
        if self.status != 101:
            raise WebSocketError(f"the upgrade was answered {self.status}: {head}")

    def _read_until(self, marker):
        while marker not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise WebSocketError("the connection closed")
            self.buffer += chunk
        head, self.buffer = self.buffer.split(marker, 1)
        return head

    def _read_exactly(self, n):
        while len(self.buffer) < n:
            chunk = self.sock.recv(max(65536, n - len(self.buffer)))
            if not chunk:
                raise WebSocketError("the connection closed")
            self.buffer += chunk
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def _send(self, opcode, payload):
        header = bytes([0x80 | opcode])
        n = len(payload)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 65536:
            header += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack("!Q", n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload)) if n < 4096 else _mask_fast(payload, mask)
        self.sock.sendall(header + mask + masked)

    def send_text(self, text):
        self._send(0x1, text.encode())

    def send_binary(self, data):
        self._send(0x2, data)

    def recv(self):
        """The next message: (opcode, bytes); opcode 8 (close) when the server closes."""
        message, first_opcode = b"", None
        while True:
            b0, b1 = self._read_exactly(2)
            opcode, n = b0 & 0x0F, b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._read_exactly(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._read_exactly(8))[0]
            payload = self._read_exactly(n)
            if opcode == 0x9:  # ping: answer and go on
                self._send(0xA, payload)
                continue
            if opcode == 0x8:
                return 0x8, payload
            first_opcode = first_opcode or opcode
            message += payload
            if b0 & 0x80:
                return first_opcode, message

    def close(self):
        try:
            self._send(0x8, struct.pack("!H", 1000))
        except OSError:
            pass
        self.sock.close()


def _mask_fast(payload, mask):
    n = len(payload)
    key = int.from_bytes((mask * (n // 4 + 1))[:n], "big")
    return (int.from_bytes(payload, "big") ^ key).to_bytes(n, "big")
