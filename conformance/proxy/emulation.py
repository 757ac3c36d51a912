"""A base for interceptors that emulate a draft KIP in front of a broker that implements the adopted protocol.

An emulation advertises the draft's versions and APIs in the broker's ApiVersions answers (so the
harness sends them), answers or translates those calls itself, and passes everything else through.
It keeps only what the draft adds; the transactions themselves stay in the broker.
"""

from __future__ import annotations

import logging
import threading

from . import interceptor as act
from .interceptor import Call

API_VERSIONS = 18
log = logging.getLogger(__name__)


class Emulation(act.PassThrough):
    """Subclasses set ``advertise`` ``{api name: (min, max)}`` and override :meth:`request` / :meth:`response`.

    :meth:`broker_max` tells which version the broker itself serves (learnt from the ApiVersions
    answers that cross the proxy), so a draft version can be forwarded as the newest one the broker has.
    """

    advertise: dict[str, tuple[int, int]] = {}

    def __init__(self):
        self.lock = threading.Lock()       # worker threads (defer) and the loop share the emulation's state
        self._versions: dict[str, tuple[int, int]] = {}   # api name -> the broker's own version range

    # ------------------------------------------------------------------ for subclasses
    def request(self, call: Call) -> act.Action | None:
        """Override: an action for a request the client sent (answer it, translate it), or None to pass it on."""
        return None

    def response(self, call: Call, payload: bytes) -> act.Action | None:
        """Override: an action for the broker's answer to ``call``, or None to pass it on as it is."""
        return None

    def close(self) -> None:
        """Called when the target stops (background work ends here)."""

    def broker_max(self, api: str, default: int) -> int:
        """The newest version of ``api`` the broker advertised (``default`` before any ApiVersions crossed)."""
        with self.lock:
            return self._versions.get(api, (0, default))[1]

    def translated(self, call: Call, body: dict, version: int) -> act.Action:
        """Forward ``body`` to the broker as ``call``'s API at ``version``; :meth:`answer_as_asked` re-encodes."""
        call.state["translated"] = True
        return act.forward(call.encode_request(body, version=version), expect=(call.api_key, version))

    @staticmethod
    def answer_as_asked(call: Call, body: dict) -> act.Action:
        """Answers ``call`` with ``body``, encoded at the version the client asked in."""
        return act.deliver(call.encode_response(body))

    # ------------------------------------------------------------------ interceptor
    # A failing emulation cuts the one connection (as a broker bug would) instead of stopping the proxy's loop.
    def on_request(self, call: Call) -> act.Action | None:
        """The proxy's entry for each request: ApiVersions passes, the rest goes to :meth:`request`."""
        if call.api_key == API_VERSIONS:
            return None
        try:
            return self.request(call)
        except Exception:  # noqa: BLE001
            log.exception("emulation %s failed on %s v%d", type(self).__name__, call.api, call.api_version)
            return act.cut()

    def on_response(self, call: Call, payload: bytes) -> act.Action | None:
        """The proxy's entry for each answer: ApiVersions gets the draft's versions added, the rest goes to :meth:`response`."""
        try:
            if call.api_key == API_VERSIONS and call.sent_api_key is None:
                return self._advertised(call, payload)
            return self.response(call, payload)
        except Exception:  # noqa: BLE001
            log.exception("emulation %s failed on the answer to %s v%d", type(self).__name__, call.api, call.api_version)
            return act.cut()

    def _advertised(self, call: Call, payload: bytes) -> act.Action | None:
        try:
            _, body = call.response(payload)
        except Exception:  # noqa: BLE001 - a v0 fallback answer to an unknown version: leave it alone
            return None
        if body.get("error_code"):
            return None
        keys = {entry["api_key"]: entry for entry in body["api_keys"]}
        with self.lock:
            for key, entry in keys.items():
                try:
                    self._versions[call.codec.registry.api(key).name] = (entry["min_version"], entry["max_version"])
                except Exception:  # noqa: BLE001 - an API this codec does not know is not one a draft changes
                    pass
        for api, (low, high) in self.advertise.items():
            key = call.codec.registry.api(api).api_key
            entry = keys.get(key)
            if entry is None:
                body["api_keys"].append({"api_key": key, "min_version": low, "max_version": high})
            else:
                entry["max_version"] = max(entry["max_version"], high)
        return act.deliver(call.encode_response(body))
