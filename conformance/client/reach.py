"""Whether the harness can reach a broker as configured, checked once before any case runs: one
line saying what is wrong (bad credentials, an untrusted or expired certificate, TLS spoken to a
plaintext port or the reverse, a SASL mechanism the broker does not enable), or None."""

from __future__ import annotations

import socket
import ssl

from .cluster import Cluster, ClusterError, split_host_port
from .connection import ClientError, SecurityFailure
from .security import Security
from .transcript import Transcript


def why_unreachable(bootstrap: str, security: Security | None = None, *, timeout: float = 10.0) -> str | None:
    """Why the broker cannot be reached as ``security`` says, in one line; None when ApiVersions and an
    (empty) Metadata request are answered, and also when the trouble is not about security (a target
    that does not speak Kafka at all is judged by the runner, after its first item)."""
    security = security or Security()
    cluster = Cluster(bootstrap, transcript=Transcript(), security=security, timeout=timeout,
                      client_id="kafka-conformance-check")
    answered_versions = False
    try:
        cluster.api_versions()
        answered_versions = True
        cluster.metadata([])  # a SASL listener closes an unauthenticated connection here
        return None
    except SecurityFailure as failure:
        return security.scrub(_first_line(failure))
    except (ClientError, ClusterError, OSError) as error:
        text = _first_line(error)
        if any(text.startswith(category) for category in CATEGORIES):  # a TLS alert while reading
            return security.scrub(text)
        address = bootstrap.split(",")[0]
        if not security.tls and _speaks_tls(*split_host_port(address), timeout):
            return (f"plaintext on a TLS port: {address} speaks TLS "
                    "(security.protocol=SSL or SASL_SSL in the client config)")
        if answered_versions and security.mechanism is None and "closed" in text:
            return ("authentication required: the broker answered ApiVersions, then closed the connection at "
                    "the first other request: the listener needs SASL (security.protocol=SASL_PLAINTEXT or "
                    "SASL_SSL, with sasl.mechanism, sasl.username and sasl.password)")
        return None
    finally:
        cluster.close()


def _speaks_tls(host: str, port: int, timeout: float) -> bool:
    """Whether a TLS handshake (nothing verified) completes or gets a TLS alert: the port speaks TLS."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    try:
        with socket.create_connection((host, port), timeout=min(timeout, 5.0)) as raw:
            with context.wrap_socket(raw, server_hostname=host):
                return True
    except ssl.SSLError as error:
        return "ALERT" in (error.reason or "").upper()
    except OSError:
        return False


# How the client's diagnoses of a refused connection begin (conformance.client.connection and .sasl)
CATEGORIES = ("bad credentials", "authentication refused", "mechanism not enabled", "no SASL on this listener",
              "untrusted certificate", "client certificate required", "client certificate refused",
              "TLS on a plaintext port", "TLS failed")


def _first_line(error: BaseException) -> str:
    """The diagnosis, from its category on (without the exchange it happened in), on one line."""
    text = str(error).strip()
    text = text.splitlines()[0] if text else type(error).__name__
    found = [text.find(category) for category in CATEGORIES if category in text]
    return text[min(found):] if found else text
