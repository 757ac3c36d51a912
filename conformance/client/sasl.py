"""SASL on one connection (KIP-43 SaslHandshake, then KIP-152 SaslAuthenticate): PLAIN, SCRAM-SHA-256
and SCRAM-SHA-512 with the exchange computed by the ``scramp`` library (RFC 5802 / RFC 7677), and
OAUTHBEARER (RFC 7628) with a token from an OIDC token endpoint (:mod:`conformance.client.oauth`).

:func:`authenticate` runs the whole exchange and returns the session lifetime the broker granted
(KIP-368, SaslAuthenticate v1+; 0 when it set none); the connection re-authenticates before it ends.
A refusal raises :class:`AuthenticationFailed` with one line that says which (bad credentials, a
mechanism the broker does not enable, a listener without SASL) and never a secret.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ..protocol.errors import error_name
from .connection import SecurityFailure

if TYPE_CHECKING:
    from .connection import Connection
    from .security import Security

HANDSHAKE_VERSION = 1  # v1: the tokens travel in SaslAuthenticate requests (v0 sent them raw)
AUTHENTICATE_VERSION = 2  # v1+ carries the session lifetime (KIP-368)
UNSUPPORTED_SASL_MECHANISM, ILLEGAL_SASL_STATE, SASL_AUTHENTICATION_FAILED = 33, 34, 58


class AuthenticationFailed(SecurityFailure):
    """The broker refused the SASL exchange (or answered it in a way the client cannot accept)."""


def authenticate(connection: "Connection", security: "Security", *, step: str = "sasl") -> int:
    """Authenticates ``connection`` as ``security`` says; returns the session lifetime in ms (0: none)."""
    mechanism = security.mechanism
    if mechanism is None:
        raise AuthenticationFailed("no SASL mechanism configured: set sasl.mechanism")
    handshake = connection.request("SaslHandshake", HANDSHAKE_VERSION, {"mechanism": mechanism}, step=step)
    code = handshake.answer["error_code"]
    if code == UNSUPPORTED_SASL_MECHANISM:
        enabled = ", ".join(handshake.answer.get("mechanisms") or []) or "none"
        raise AuthenticationFailed(f"mechanism not enabled: the broker does not enable SASL mechanism {mechanism} "
                                   f"on this listener (it enables: {enabled}); check sasl.mechanism", handshake)
    if code == ILLEGAL_SASL_STATE:
        raise AuthenticationFailed("no SASL on this listener: the broker refused the SASL handshake "
                                   "(ILLEGAL_SASL_STATE); is it a PLAINTEXT or SSL listener? check security.protocol",
                                   handshake)
    if code:
        raise AuthenticationFailed(f"the SASL handshake for {mechanism} was refused: {error_name(code)}", handshake)
    if mechanism == "OAUTHBEARER":
        return _oauthbearer(connection, security, step)
    if mechanism == "PLAIN":
        token = f"\0{security.sasl_username}\0{security.sasl_password}".encode()
        return _step(connection, security, token, step).get("session_lifetime_ms", 0) or 0
    return _scram(connection, security, mechanism, step)


def _scram(connection: "Connection", security: "Security", mechanism: str, step: str) -> int:
    from scramp import ScramClient, ScramException

    try:
        client = ScramClient([mechanism], security.sasl_username, security.sasl_password or "")
    except ScramException as error:  # a user name or password SASLprep refuses (control characters)
        raise AuthenticationFailed(f"SASL/{mechanism}: the user name or password cannot be used: "
                                   f"{security.scrub(str(error))}") from None
    first = _step(connection, security, client.get_client_first().encode(), step)
    try:
        client.set_server_first(_text(first))
        final = _step(connection, security, client.get_client_final().encode(), step)
        client.set_server_final(_text(final))
    except (ScramException, KeyError, ValueError) as error:
        raise AuthenticationFailed(f"SASL/{mechanism}: the broker's answer does not complete the SCRAM exchange "
                                   f"({security.scrub(str(error))}): it does not hold these credentials, or "
                                   "it is not the broker it claims to be") from None
    return final.get("session_lifetime_ms", 0) or 0


def _oauthbearer(connection: "Connection", security: "Security", step: str) -> int:
    """RFC 7628: the token in the client's first message; an error comes back as a JSON challenge, which
    the client answers with a lone %x01 before the broker fails the exchange."""
    from .oauth import TokenError

    if security.oauth is None:
        raise AuthenticationFailed("SASL/OAUTHBEARER needs a token endpoint: set sasl.oauthbearer.token.endpoint.url")
    try:
        first = security.oauth.initial_response()
    except TokenError as error:
        raise AuthenticationFailed(security.scrub(str(error))) from None
    answer = _step(connection, security, first, step)
    challenge = _text(answer)
    if not challenge:
        return answer.get("session_lifetime_ms", 0) or 0
    try:
        status = json.loads(challenge).get("status", "refused")
    except (ValueError, AttributeError):
        status = "refused"
    try:
        _step(connection, security, b"\x01", step)
    except AuthenticationFailed as refused:
        said = str(refused).partition("(")[2].rstrip(")")
        raise AuthenticationFailed(f"bad credentials: the broker refused the OAUTHBEARER token ({status}"
                                   f"{': ' + said if said else ''})", refused.exchange) from None
    raise AuthenticationFailed(f"bad credentials: the broker refused the OAUTHBEARER token ({status})")


def _step(connection: "Connection", security: "Security", token: bytes, step: str) -> dict:
    answer = connection.request("SaslAuthenticate", AUTHENTICATE_VERSION, {"auth_bytes": token}, step=step)
    response = answer.answer
    code = response["error_code"]
    if code:
        said = response.get("error_message")
        said = f": {security.scrub(said)}" if said else ""
        what = "bad credentials" if code == SASL_AUTHENTICATION_FAILED else "authentication refused"
        raise AuthenticationFailed(f"{what}: the broker refused SASL/{security.mechanism} authentication "
                                   f"({error_name(code)}{said})", answer)
    return response


def _text(response: dict) -> str:
    return bytes(response.get("auth_bytes") or b"").decode("utf-8")
