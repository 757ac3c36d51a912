"""Per-version maps in suites: ``{"0-3": A, "4+": B}`` says A for versions 0 to 3 and B from 4 on.

Both the loader's checks and the matchers ask whether a value is such a map; it lives here, below both.
"""

from __future__ import annotations

from ..protocol.exceptions import SpecError
from ..protocol.schema import VersionRange


def is_version_map(value) -> bool:
    return isinstance(value, dict) and bool(value) and all(
        isinstance(key, (str, int)) and _is_range_text(str(key)) for key in value)


def _is_range_text(text: str) -> bool:
    try:
        VersionRange.parse(text)
        return text != "none"
    except SpecError:
        return False
