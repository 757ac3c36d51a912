"""TLS on either side of the proxy, without sockets: bytes from the wire in, plaintext out, and back.

The proxy's loop owns non-blocking sockets and a selector; an ``ssl.SSLSocket`` would hide bytes in its
own buffers where the selector cannot see them. An ``SSLObject`` over two memory BIOs keeps TLS a pure
transformation the loop drives like the Kafka frames themselves: :meth:`TlsEnd.receive` takes what the
socket read and returns plaintext, :meth:`TlsEnd.send` takes plaintext, and :meth:`TlsEnd.outgoing` is what
the socket must write (records, and the handshake's own messages).

The proxy terminates the client's TLS with a certificate of its own and opens its own TLS to the broker:
it reads Kafka frames to apply faults, so it cannot pass TLS through. Which identity it shows the broker
(the client certificate of mutual TLS) is chosen by the listener the client reached, one per principal,
since the broker's ACLs name that identity.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Callable

READ_SIZE = 64 * 1024


@dataclass(frozen=True)
class ProxyTls:
    """What the proxy needs to stand in front of a TLS listener.

    ``server``: the context the proxy's listeners accept TLS with (its own certificate, which the harness's
    clients are made to trust). ``client_for(identity)``: the context the proxy reaches the broker with for
    a listener made for ``identity`` (None: the harness's own), with the broker's CA and that identity's
    client certificate where the listener asks for one. ``server_hostname``: the name the broker's
    certificate is checked against (None: the upstream host)."""

    server: ssl.SSLContext
    client_for: Callable[[str | None], ssl.SSLContext]
    server_hostname: str | None = None


class TlsEnd:
    """One TLS connection's state, either the proxy's server end (facing a client) or its client end."""

    def __init__(self, context: ssl.SSLContext, *, server_side: bool, server_hostname: str | None = None):
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._tls = context.wrap_bio(self._incoming, self._outgoing, server_side=server_side,
                                     server_hostname=None if server_side else server_hostname)
        self._waiting = bytearray()  # plaintext given before the handshake finished
        self.established = False
        self.closed = False  # the peer sent close_notify
        if not server_side:
            self._handshake()  # the client speaks first: its hello is in outgoing()

    def receive(self, data: bytes) -> bytes:
        """The plaintext ``data`` (bytes read from the socket) completes; raises ``ssl.SSLError`` on a TLS
        failure (an untrusted certificate, a broken record), which ends the connection."""
        self._incoming.write(data)
        if not self.established and not self._handshake():
            return b""
        plain = bytearray()
        while True:
            try:
                chunk = self._tls.read(READ_SIZE)
            except ssl.SSLWantReadError:
                break
            except ssl.SSLZeroReturnError:
                self.closed = True
                break
            if not chunk:
                break
            plain += chunk
        return bytes(plain)

    def send(self, plain: bytes) -> None:
        if self.established:
            self._tls.write(plain)
        else:
            self._waiting += plain

    def outgoing(self) -> bytes:
        """What must be written to the socket now."""
        return self._outgoing.read()

    def _handshake(self) -> bool:
        try:
            self._tls.do_handshake()
        except ssl.SSLWantReadError:
            return False
        self.established = True
        if self._waiting:
            self._tls.write(bytes(self._waiting))
            self._waiting.clear()
        return True
