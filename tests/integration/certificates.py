"""Test certificates, made at run time with the openssl command: a CA, and certificates it signs
for 127.0.0.1 and localhost (the master's, an agent's), or a self-signed one nobody vouches for."""

import os
import subprocess


def _openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def _new_key_request(directory, name):
    key = os.path.join(directory, f"{name}.key")
    request = os.path.join(directory, f"{name}.csr")
    _openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", key, "-out", request, "-subj", f"/CN={name}")
    return key, request


class TestPki:
    """A CA under `directory`; sign(name) and self_signed(name) return (certificate, key) paths."""

    def __init__(self, directory):
        self.directory = directory
        os.makedirs(directory, exist_ok=True)
        self.ca = os.path.join(directory, "ca.pem")
        self.ca_key = os.path.join(directory, "ca.key")
        _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                 "-keyout", self.ca_key, "-out", self.ca, "-days", "2", "-subj", "/CN=det test CA")

    def sign(self, name):
        key, request = _new_key_request(self.directory, name)
        extensions = os.path.join(self.directory, f"{name}.ext")
        with open(extensions, "w") as f:
            f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        cert = os.path.join(self.directory, f"{name}.pem")
        _openssl("x509", "-req", "-in", request, "-CA", self.ca, "-CAkey", self.ca_key, "-CAcreateserial",
                 "-out", cert, "-days", "2", "-extfile", extensions)
        return cert, key

    def self_signed(self, name):
        key = os.path.join(self.directory, f"{name}.key")
        cert = os.path.join(self.directory, f"{name}.pem")
        _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                 "-keyout", key, "-out", cert, "-days", "2", "-subj", f"/CN={name}",
                 "-addext", "subjectAltName=IP:127.0.0.1")
        return cert, key
