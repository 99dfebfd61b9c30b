"""A signed-in connection to det's REST API, as det's CLI makes one (standard library only)."""

import base64
import http.client
import json
import os
import ssl
import urllib.parse
from typing import Any, Dict, Optional


class APIError(RuntimeError):
    """The master refused a call; the message is its sentence."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def given_master(master: Optional[str]) -> str:
    """`master`, else DET_MASTER, else det's CLI's default, as det's CLI names it."""
    url = master or os.environ.get("DET_MASTER") or os.environ.get("DET_MASTER_ADDR") or "http://127.0.0.1:8080"
    return url.rstrip("/")


def _saved_token(given: str, url: str, user: Optional[str]) -> Optional[str]:
    """The token `det user login` saved (~/.config/det/auth.json) for the master as it was named
    there, or as `url`, if it is `user`'s."""
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    try:
        with open(os.path.join(config, "det", "auth.json")) as f:
            masters = json.load(f).get("masters", {})
        entry = masters.get(given) or masters.get(url)
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(entry, dict) or not entry.get("token"):
        return None
    if user is not None and entry.get("username") != user:
        return None
    return entry["token"]


class Session:
    """REST calls to one master with one user's token."""

    def __init__(self, master: Optional[str] = None, user: Optional[str] = None, password: Optional[str] = None,
                 cert_path: Optional[str] = None, noverify: bool = False) -> None:
        given = given_master(master)
        self.master = given if "://" in given else "http://" + given  # a bare host:port is http://
        address = urllib.parse.urlsplit(self.master)
        self._host, self._port = address.hostname, address.port
        self._tls: Optional[ssl.SSLContext] = None
        if address.scheme == "https":
            if noverify:
                self._tls = ssl._create_unverified_context()
            else:
                self._tls = ssl.create_default_context(
                    cafile=cert_path or os.environ.get("DET_MASTER_CERT_FILE") or None)
        self._token: Optional[str] = None
        # The environment's credentials are for the environment's master (DET_MASTER) only: a
        # script told to log in elsewhere must not hand them to that other host.
        env_master = master is None or given == given_master(None)
        user_given = user is not None
        if env_master:
            user = user or os.environ.get("DET_USER") or None
            password = password if password is not None else os.environ.get("DET_PASS")
        if password is not None:
            if user is None:
                raise ValueError("login() was given a password without a user: pass user= or set DET_USER")
            reply = self.post("/api/v1/auth/login", {"username": user, "password": password})
            self._token = reply["token"]
        else:
            env_token = os.environ.get("DET_USER_TOKEN") if env_master and not user_given else None
            self._token = env_token or _saved_token(given, self.master, user)
        if not self._token:
            who = f"user {user}" if user else "anyone"
            raise APIError(401, f"no saved login of {who} for {self.master}: run `det user login` (det's CLI "
                                "saves the session where this client reads it), set DET_USER and DET_PASS or "
                                "DET_USER_TOKEN, or pass user and password to login(); a trial's process has no "
                                "user session of its own on det")
        self.username = user

    def _connection(self) -> http.client.HTTPConnection:
        if self._tls is not None:
            return http.client.HTTPSConnection(self._host, self._port, timeout=60, context=self._tls)
        return http.client.HTTPConnection(self._host, self._port, timeout=60)

    def request_bytes(self, method: str, path: str, body: Optional[Dict[str, Any]] = None) -> bytes:
        headers = {"Content-Type": "application/json"}
        if self._token:
            headers["Authorization"] = "Bearer " + self._token
        data = None if body is None else json.dumps(body).encode()
        connection = self._connection()
        try:
            connection.request(method, path, body=data, headers=headers)
            reply = connection.getresponse()
            payload = reply.read()
        finally:
            connection.close()
        if reply.status >= 400:
            try:
                message = json.loads(payload).get("error") or f"HTTP {reply.status}"
            except ValueError:
                message = f"HTTP {reply.status}"
            raise APIError(reply.status, f"{method} {path}: {message}")
        return payload

    def request(self, method: str, path: str, body: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        return json.loads(self.request_bytes(method, path, body) or b"{}")

    def get(self, path: str, **params: Any) -> Dict[str, Any]:
        query = [(k, v) for k, v in params.items() if v is not None]
        return self.request("GET", path + ("?" + urllib.parse.urlencode(query, doseq=True) if query else ""))

    def post(self, path: str, body: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        return self.request("POST", path, body if body is not None else {})


def quoted(segment: str) -> str:
    """One path segment of a URL: any text, '/' and '%' included, encoded."""
    return urllib.parse.quote(segment, safe="")


def b64(data: bytes) -> str:
    """A `bytes` field of a request, as protobuf's JSON writes it."""
    return base64.b64encode(data).decode()
