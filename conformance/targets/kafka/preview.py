"""Options of a ``kafka`` spec that turn on what Kafka ships but does not yet serve by default.

``kafka,two.phase.commit=true`` provisions the broker for KIP-939's two-phase commit: Kafka 4.x keeps
InitProducerId v6 (``enable_2pc``, ``keep_prepared_txn``) behind ``unstable.api.versions.enable`` while
its spec marks the version unstable, and refuses a 2PC producer unless
``transaction.two.phase.commit.enable`` is on. ``kafka:3.9.1,consumer.groups=true`` turns on KIP-848's
consumer groups where a release had them as a preview (3.7 to 3.9). The settings go over the profile like any
override.
"""

from __future__ import annotations

# option name -> the broker settings it stands for when true
PREVIEW_OPTIONS: dict[str, dict[str, str]] = {
    "two.phase.commit": {
        "unstable.api.versions.enable": "true",
        "transaction.two.phase.commit.enable": "true",
    },
    # KIP-848's consumer groups before 4.0, where they were a preview left off by default: the consumer protocol
    # turns the new group coordinator on (3.8 and 3.9; 3.7 asks for it by name as well).
    "consumer.groups": {
        "group.coordinator.rebalance.protocols": "classic,consumer",
        "group.coordinator.new.enable": "true",
    },
}
_BOOLEANS = {"true": True, "false": False}


def preview_settings(spec: str, options: dict[str, str]) -> dict[str, str]:
    """The broker settings the preview options among ``options`` ask for; ValueError for a non-boolean."""
    settings: dict[str, str] = {}
    for name, stands_for in PREVIEW_OPTIONS.items():
        if name not in options:
            continue
        value = options[name].lower()
        if value not in _BOOLEANS:
            raise ValueError(f"{spec!r}: {name} takes true or false, not {options[name]!r}")
        if _BOOLEANS[value]:
            settings.update(stands_for)
    return settings
