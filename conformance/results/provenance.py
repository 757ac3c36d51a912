"""Which harness wrote a result: the package version and, in a git checkout, the commit. Computed once.

Every consumer asks :func:`provenance` (cached for the process): the results lines' ``harness_version``,
the Allure environment and report name, and certification.json's ``harness``. Each keeps the form it
had: a results line says ``VERSION+gCOMMIT`` (short commit) so analyses tell a harness change from a
target's flakiness; a certification names the full commit apart.
"""

from __future__ import annotations

import functools
import subprocess
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version

from .. import resources

DISTRIBUTION = "kafka-conformance"


@dataclass(frozen=True)
class Provenance:
    package_version: str | None  # None: not installed (a source tree on sys.path)
    commit: str | None  # the full commit of the checkout the package runs from; None for a wheel
    short_commit: str | None = None  # as git abbreviates it (seven digits or more, whatever keeps it unique)

    @property
    def release(self) -> str:
        """The package version, or what a page says when there is none."""
        return self.package_version or "unknown (source tree)"

    @property
    def harness_version(self) -> str:
        """A results line's ``harness_version``: ``0.1.0+gabc1234`` in a checkout, ``0.1.0`` from a wheel."""
        text = self.package_version or "unknown"
        return f"{text}+g{self.short_commit}" if self.short_commit else text


@functools.lru_cache(maxsize=1)
def provenance() -> Provenance:
    try:
        package_version: str | None = version(DISTRIBUTION)
    except PackageNotFoundError:
        package_version = None
    return Provenance(package_version, *_commit())


def _commit() -> tuple[str | None, str | None]:
    """The checkout's commit, full and abbreviated; none for a wheel, whose surroundings are someone else's,
    nor for a source tree that is not itself a repository (a copy inside another project's)."""
    checkout = resources.source_tree()
    if checkout is None or not (checkout / ".git").exists():
        return None, None
    try:
        found = subprocess.run(["git", "log", "-1", "--format=%H %h"], cwd=checkout, timeout=10,
                               capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return None, None
    return (found[0], found[1]) if len(found) == 2 else (None, None)
