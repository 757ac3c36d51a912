"""Rewriting the broker addresses a response advertises, so that clients keep talking through the proxy.

Metadata, FindCoordinator (one coordinator before v4, a list from v4) and DescribeCluster name brokers
by host and port; each address is replaced by the proxy's listener for it (``local_address`` makes one
on first sight). Everything else passes untouched and undecoded, which keeps the proxy cheap.
"""

from __future__ import annotations

import logging
from typing import Callable

from ..protocol import frames
from ..protocol.codec import Codec

log = logging.getLogger(__name__)
Mapper = Callable[[str, int], tuple[str, int]]
REWRITTEN_APIS = ("Metadata", "FindCoordinator", "DescribeCluster")


def api_keys(codec: Codec) -> set[int]:
    keys = set()
    for name in REWRITTEN_APIS:
        try:
            keys.add(codec.registry.api(name).api_key)
        except Exception:  # noqa: BLE001 - a codec without the API simply never rewrites it
            pass
    return keys


def _rewrite_entry(entry: dict, local_address: Mapper) -> bool:
    host, port = entry.get("host"), entry.get("port")
    if not host or port is None or port < 0:   # FindCoordinator errors carry "" and -1
        return False
    entry["host"], entry["port"] = local_address(host, port)
    return True


def rewrite(codec: Codec, api_key: int, version: int, payload: bytes, local_address: Mapper) -> bytes:
    """The response payload with every advertised broker address mapped; unchanged when there is none
    or the response cannot be read (a version the codec does not know is passed on as it came)."""
    try:
        # bytes after the body (librdkafka's mock cluster sends one) are kept as they came
        header, body, tail = frames.decode_response_with_tail(codec, api_key, version, payload)
    except Exception as error:  # noqa: BLE001 - the client will judge an unreadable response; the proxy relays it
        # said out loud: clients may now bypass the proxy, and its faults with it
        log.warning("proxy: cannot read a %s v%d response to rewrite its addresses: %s", api_key, version, error)
        return payload
    entries = list(body.get("brokers") or []) + list(body.get("coordinators") or [])
    if "host" in body and "port" in body:
        entries.append(body)
    changed = [_rewrite_entry(entry, local_address) for entry in entries]
    if not any(changed):
        return payload
    rewritten = frames.encode_response(codec, api_key, version, header["correlation_id"], body)[4:]
    return rewritten + payload[len(payload) - tail:] if tail else rewritten


class Rewriter:
    """:func:`rewrite` with the answers remembered: the harness asks for the same metadata again and again,
    and a response that differs only in its correlation id (its first four bytes) is rewritten the same way."""

    LIMIT = 256

    def __init__(self, codec: Codec, local_address: Mapper):
        self.codec = codec
        self.local_address = local_address
        self.api_keys = api_keys(codec)
        self._seen: dict[tuple[int, int, bytes], bytes] = {}

    def __call__(self, api_key: int, version: int, payload: bytes) -> bytes:
        key = (api_key, version, payload[4:])
        tail = self._seen.get(key)
        if tail is None:
            tail = rewrite(self.codec, api_key, version, payload, self.local_address)[4:]
            if len(self._seen) >= self.LIMIT:
                self._seen.clear()
            self._seen[key] = tail
        return payload[:4] + tail
