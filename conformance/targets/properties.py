"""Java properties files: a user's client config, a principal's, a broker profile."""

from __future__ import annotations

from pathlib import Path


def read_properties(path: Path) -> dict[str, str]:
    """``key=value`` / ``key: value`` lines of a Java properties file; ``#`` and ``!`` start comments.

    Line continuations and escapes are not supported: broker profiles do not need them.
    """
    settings: dict[str, str] = {}
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        separator = min((line.find(mark) for mark in "=:" if mark in line), default=-1)
        if separator <= 0:
            raise ValueError(f"{path}:{number}: expected key=value, got {raw!r}")
        settings[line[:separator].strip()] = line[separator + 1 :].strip()
    return settings
