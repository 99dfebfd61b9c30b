"""A user's REST session with det's master, from the standard library.

The master is DET_MASTER (default http://127.0.0.1:8080). The login is, in order: the token
given, DET_USER_TOKEN, the session `det user login` saved for that master
(~/.config/det/auth.json), or DET_USER and DET_PASS. Calls are retried while the master is
unreachable or restarting, up to `retry_seconds`.
"""

import http.client
import json
import os
import pathlib
import ssl
import time
import urllib.parse
from typing import Any, Dict, Optional


class DetError(Exception):
    """A call failed: the master refused it (`status`, the HTTP status, and its sentence), or it
    could not be reached (`status` None)."""

    def __init__(self, message: str, status: Optional[int] = None) -> None:
        super().__init__(message)
        self.status = status


def _saved_token(master: str) -> Optional[str]:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    path = pathlib.Path(base) / "det" / "auth.json"
    try:
        masters = json.loads(path.read_text()).get("masters", {})
    except (OSError, ValueError, AttributeError):
        return None
    for url in (master, master + "/"):
        entry = masters.get(url)
        if isinstance(entry, dict) and entry.get("token"):
            return str(entry["token"])
    return None


class Session:
    def __init__(self, master: Optional[str] = None, token: Optional[str] = None, retry_seconds: float = 600) -> None:
        self.master = (master or os.environ.get("DET_MASTER") or "http://127.0.0.1:8080").rstrip("/")
        if "://" not in self.master:
            self.master = "http://" + self.master
        self._address = urllib.parse.urlsplit(self.master)
        self._tls = (ssl.create_default_context(cafile=os.environ.get("DET_MASTER_CERT_FILE") or None)
                     if self._address.scheme == "https" else None)
        self.retry_seconds = retry_seconds
        self._connection: Optional[http.client.HTTPConnection] = None
        self.token = token or os.environ.get("DET_USER_TOKEN") or _saved_token(self.master)
        if not self.token and os.environ.get("DET_USER"):
            reply = self.request("POST", "/api/v1/auth/login",
                                 {"username": os.environ["DET_USER"], "password": os.environ.get("DET_PASS", "")})
            self.token = reply["token"]

    def close(self) -> None:
        if self._connection:
            self._connection.close()
            self._connection = None

    def _connect(self) -> http.client.HTTPConnection:
        host, port = self._address.hostname, self._address.port
        if self._tls:
            return http.client.HTTPSConnection(host, port, timeout=90, context=self._tls)
        return http.client.HTTPConnection(host, port, timeout=90)

    def request(self, method: str, path: str, body: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        """The JSON reply of one call. A refusal (4xx) raises DetError at once; an unreachable or
        restarting master (connection errors, 502, 503, 504) is asked again until retry_seconds."""
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        deadline = time.monotonic() + self.retry_seconds
        while True:
            reused = self._connection is not None
            try:
                if not reused:
                    self._connection = self._connect()
                self._connection.request(method, path, body=data, headers=headers)
                reply = self._connection.getresponse()
                payload = reply.read()
            except (OSError, http.client.HTTPException) as e:
                self.close()
                if reused and isinstance(e, (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)):
                    continue  # the master closed a kept-alive connection
                if time.monotonic() >= deadline:
                    raise DetError(f"cannot reach the det master at {self.master}: {e}") from None
                time.sleep(0.5)
                continue
            if reply.status < 400:
                return json.loads(payload or b"{}")
            try:
                message = json.loads(payload).get("error", f"HTTP {reply.status}")
            except ValueError:
                message = f"HTTP {reply.status}"
            if reply.status not in (502, 503, 504) or time.monotonic() >= deadline:
                raise DetError(f"{method} {path}: {message}", reply.status)
            time.sleep(0.5)
