"""A minimal OIDC provider on 127.0.0.1 for a Kafka the harness provisions with SASL/OAUTHBEARER:
``/token`` issues RS256 JWTs by the client credentials grant (RFC 6749 section 4.4, HTTP Basic client
authentication), ``/jwks`` serves the public key (RFC 7517) Kafka validates them against.

Only for loopback test brokers: one RSA key made at start (``cryptography`` signs), clients and secrets
given by the target, the JWT's ``sub`` is the client id (so it is the Kafka principal).
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

AUDIENCE = "kafka"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _integer(value: int) -> str:
    return _b64(value.to_bytes((value.bit_length() + 7) // 8, "big"))


class TokenProvider:
    def __init__(self, clients: dict[str, str], *, lifetime_s: int = 3600, audience: str = AUDIENCE):
        self.clients = dict(clients)
        self.lifetime_s = lifetime_s
        self.audience = audience
        self.issued = 0
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self._kid = secrets.token_hex(8)
        self._server: ThreadingHTTPServer | None = None

    def start(self) -> "TokenProvider":
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *arguments) -> None:  # quiet: a test broker's provider
                pass

            def do_GET(self) -> None:
                if self.path.split("?")[0] == "/jwks":
                    self._answer(200, provider.jwks())
                else:
                    self._answer(404, {"error": "not_found"})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                form = urllib.parse.parse_qs(self.rfile.read(length).decode())
                if self.path.split("?")[0] != "/token" or form.get("grant_type") != ["client_credentials"]:
                    self._answer(400, {"error": "unsupported_grant_type"})
                    return
                client = provider.authenticate(self.headers.get("Authorization") or "")
                if client is None:
                    self._answer(401, {"error": "invalid_client"})
                    return
                scope = (form.get("scope") or [""])[0]
                self._answer(200, {"access_token": provider.issue(client, scope), "token_type": "Bearer",
                                   "expires_in": provider.lifetime_s})

            def _answer(self, status: int, document: dict) -> None:
                body = json.dumps(document).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True, name="oidc-provider").start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def issuer(self) -> str:
        assert self._server is not None, "the provider is not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def token_endpoint(self) -> str:
        return f"{self.issuer}/token"

    @property
    def jwks_endpoint(self) -> str:
        return f"{self.issuer}/jwks"

    def jwks(self) -> dict:
        numbers = self._key.public_key().public_numbers()
        return {"keys": [{"kty": "RSA", "use": "sig", "alg": "RS256", "kid": self._kid,
                          "n": _integer(numbers.n), "e": _integer(numbers.e)}]}

    def authenticate(self, header: str) -> str | None:
        """The client id an HTTP Basic header proves (RFC 6749 2.3.1: both parts form-urlencoded), or None."""
        scheme, _, encoded = header.partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            client_id, _, secret = base64.b64decode(encoded).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return None
        client_id, secret = urllib.parse.unquote_plus(client_id), urllib.parse.unquote_plus(secret)
        expected = self.clients.get(client_id)
        return client_id if expected is not None and secrets.compare_digest(expected, secret) else None

    def issue(self, subject: str, scope: str = "", *, lifetime_s: int | None = None, issuer: str | None = None,
              audience: str | None = None) -> str:
        """A signed JWT for ``subject`` (other claims overridable, to make tokens Kafka must refuse)."""
        now = int(time.time())
        claims = {"iss": issuer or self.issuer, "sub": subject, "aud": audience or self.audience, "iat": now,
                  "nbf": now, "exp": now + (self.lifetime_s if lifetime_s is None else lifetime_s),
                  "jti": secrets.token_hex(8)}
        if scope:
            claims["scope"] = scope
        header = {"alg": "RS256", "typ": "JWT", "kid": self._kid}
        signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
        signature = self._key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        self.issued += 1
        return f"{signing_input}.{_b64(signature)}"
