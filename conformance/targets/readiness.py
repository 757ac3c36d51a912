"""Waiting until a freshly started broker really serves clients."""

from __future__ import annotations

import time
from typing import Callable


def wait_for_metadata(bootstrap: str, timeout: float, is_running: Callable[[], bool] = lambda: True) -> str:
    """Poll with Metadata requests until the broker answers: ``""`` once it does, else why not.

    An open port proves little (Docker's proxy accepts connections before the broker is up, a JVM
    binds before it serves), so readiness is a Metadata answer, as a client would see it.
    ``is_running`` lets the wait end early when the broker's process or container has died.
    """
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(
        {
            "bootstrap.servers": bootstrap,
            # Retry quickly; a refused connection is expected here, so keep it out of stderr.
            "reconnect.backoff.max.ms": 500,
            "log_level": 2,
        }
    )
    deadline = time.monotonic() + timeout
    last_error = "no answer"
    while time.monotonic() < deadline:
        if not is_running():
            return "it stopped running"
        try:
            admin.list_topics(timeout=min(2.0, max(0.1, deadline - time.monotonic())))
            return ""
        except Exception as exc:  # KafkaException; anything here only means "not yet"
            last_error = str(exc)
    return f"no Metadata answer from {bootstrap} within {timeout:g}s ({last_error})"
