"""SASL/OAUTHBEARER (KIP-255, RFC 7628) with a token from an OIDC provider's token endpoint by the client
credentials grant (RFC 6749 section 4.4), as Kafka's clients get one (KIP-768).

The token is fetched when first needed and again once 80% of its life has passed, so a re-authentication
(KIP-368: the broker ends the session no later than the token expires) always presents a live one.
Client secrets and tokens have no repr and never reach a message. The client config keys that make an
:class:`OAuthClient` are read by :mod:`.security`, with every other key; this module imports nothing of it.
"""

from __future__ import annotations

import base64
import json
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field

REFRESH_AT = 0.8  # of a token's life
FETCH_TIMEOUT = 10.0


class TokenError(Exception):
    """The token endpoint gave no token; the message says why in one line, without a secret."""


@dataclass(eq=False)
class OAuthClient:
    """Client credentials for a token endpoint; ``token()`` hands out a cached, live access token."""

    token_endpoint: str
    client_id: str
    client_secret: str = field(repr=False)
    scope: str | None = None
    extensions: dict[str, str] = field(default_factory=dict)
    ca_file: str | None = None  # for an https token endpoint (else the system's CAs)
    _token: str | None = field(default=None, repr=False)
    _refresh_at: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def secrets(self) -> list[str]:
        return [value for value in (self.client_secret, self._token) if value]

    def token(self) -> str:
        with self._lock:
            if self._token is None or time.monotonic() >= self._refresh_at:
                self._token, lifetime = self._fetch()
                self._refresh_at = time.monotonic() + lifetime * REFRESH_AT
            return self._token

    def initial_response(self) -> bytes:
        """RFC 7628's client response: the GS2 header, ``auth=Bearer TOKEN``, extensions (KIP-342)."""
        pairs = [f"auth=Bearer {self.token()}"] + [f"{key}={value}" for key, value in self.extensions.items()]
        return ("n,," + "".join(f"\x01{pair}" for pair in pairs) + "\x01\x01").encode()

    def _fetch(self) -> tuple[str, float]:
        body = {"grant_type": "client_credentials"}
        if self.scope:
            body["scope"] = self.scope
        credentials = f"{urllib.parse.quote(self.client_id, safe='')}:{urllib.parse.quote(self.client_secret, safe='')}"
        request = urllib.request.Request(
            self.token_endpoint, data=urllib.parse.urlencode(body).encode(), method="POST",
            headers={"Authorization": "Basic " + base64.b64encode(credentials.encode()).decode(),
                     "Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"})
        context = ssl.create_default_context(cafile=self.ca_file) if self.token_endpoint.startswith("https:") else None
        try:
            with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT, context=context) as answer:
                document = json.loads(answer.read().decode())
        except urllib.error.HTTPError as error:
            error.close()  # the refusal carries the open answer; nothing more is read from it
            what = "bad credentials" if error.code in (400, 401, 403) else "token endpoint error"
            raise TokenError(f"{what}: the token endpoint {self.token_endpoint} refused the client credentials of "
                             f"{self.client_id!r} (HTTP {error.code})") from None
        except (urllib.error.URLError, OSError, ValueError) as error:
            reason = getattr(error, "reason", None) or error
            raise TokenError(f"token endpoint unreachable: {self.token_endpoint}: {reason}") from None
        token = document.get("access_token") if isinstance(document, dict) else None
        if not isinstance(token, str) or not token:
            raise TokenError(f"token endpoint error: {self.token_endpoint} answered without an access_token")
        lifetime = document.get("expires_in")
        return token, float(lifetime) if isinstance(lifetime, (int, float)) and lifetime > 0 else 3600.0
