"""Which error codes Apache Kafka's broker answers per API and version, and which the local broker cannot.

The bundled message specs carry structure only, so the codes each API under test can get live in
``error_catalogue.yaml`` beside this module (its header says where the facts come from). Every entry
names a request-version range, what triggers the code, and, when the single local broker the harness
provisions cannot be made to answer it, why not. The coverage document holds the suites against it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import yaml

from .. import resources
from .errors import UnknownErrorName, error_by_name
from .exceptions import SpecError
from .schema import SpecRegistry, VersionRange

BUNDLED_CATALOGUE = resources.error_catalogue()
ENTRY_KEYS = frozenset({"versions", "when", "local"})
SHARED_PREFIX = "x-"  # top-level keys holding shared wording (YAML anchors), not APIs


class CatalogueError(ValueError):
    """A catalogue naming an unknown API or error, or holding a malformed entry; the message says where."""


@dataclass(frozen=True)
class CatalogueEntry:
    api: str
    error: str  # the NAME, as in errors.py
    versions: VersionRange
    when: str
    local: str | None = None  # why the single local broker cannot answer the code; None when it can

    @property
    def triggerable_locally(self) -> bool:
        return self.local is None


class ErrorCatalogue:
    def __init__(self, entries: Iterable[CatalogueEntry]):
        self._by_api: dict[str, list[CatalogueEntry]] = {}
        for entry in entries:
            self._by_api.setdefault(entry.api, []).append(entry)

    def apis(self) -> list[str]:
        return sorted(self._by_api)

    def codes(self, api: str, version: int) -> dict[str, CatalogueEntry]:
        """The codes the broker can answer ``api`` at ``version``, by NAME ({} for an API not catalogued)."""
        return {entry.error: entry for entry in self._by_api.get(api, ()) if version in entry.versions}


# ------------------------------------------------------------------------------ loading
def parse_catalogue(text: str, source: str = "<string>", registry: SpecRegistry | None = None) -> ErrorCatalogue:
    """Parse and validate catalogue YAML; API names are checked against ``registry`` (default: the codec's)."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise CatalogueError(f"{source}: not valid YAML: {error}") from None
    if not isinstance(raw, dict):
        raise CatalogueError(f"{source}: expected a mapping from API names to their error codes")
    if registry is None:
        from .codec import default_codec

        registry = default_codec().registry
    entries = []
    for api, codes in raw.items():
        if str(api).startswith(SHARED_PREFIX):
            continue
        api_versions = _api_versions(str(api), codes, source, registry)
        entries += [_entry(str(api), str(error), fields, api_versions, f"{source}: {api} {error}")
                    for error, fields in codes.items()]
    return ErrorCatalogue(entries)


def load_catalogue(path: Path | str | None = None, registry: SpecRegistry | None = None) -> ErrorCatalogue:
    path = Path(path) if path is not None else BUNDLED_CATALOGUE
    return parse_catalogue(path.read_text(encoding="utf-8"), str(path), registry)


@functools.cache
def bundled_catalogue() -> ErrorCatalogue:
    return load_catalogue()


def codes(api: str, version: int) -> dict[str, CatalogueEntry]:
    """The bundled catalogue's codes for ``api`` at ``version``, by NAME."""
    return bundled_catalogue().codes(api, version)


def _api_versions(api: str, codes: object, source: str, registry: SpecRegistry) -> list[int]:
    if api not in registry.api_names():
        raise CatalogueError(f"{source}: {api}: unknown API; known: {', '.join(registry.api_names())}")
    if not isinstance(codes, dict) or not codes:
        raise CatalogueError(f"{source}: {api}: expected a mapping from error names to entries")
    return registry.api(api).versions()


def _entry(api: str, error: str, fields: object, api_versions: list[int], where: str) -> CatalogueEntry:
    try:
        name = error_by_name(error).name
    except UnknownErrorName as problem:
        raise CatalogueError(f"{where}: {problem}") from None
    if name != error:  # codes and other spellings resolve too, but the file must read the same everywhere
        raise CatalogueError(f"{where}: write the error as {name}")
    if not isinstance(fields, dict):
        raise CatalogueError(f"{where}: expected a mapping with {', '.join(sorted(ENTRY_KEYS))}")
    unknown = sorted(set(fields) - ENTRY_KEYS)
    if unknown:
        raise CatalogueError(f"{where}: unknown keys {', '.join(map(str, unknown))}; "
                             f"an entry has {', '.join(sorted(ENTRY_KEYS))}")
    when, local = fields.get("when"), fields.get("local")
    if not isinstance(when, str) or not when.strip():
        raise CatalogueError(f"{where}: 'when' must say what triggers the code")
    if local is not None and (not isinstance(local, str) or not local.strip()):
        raise CatalogueError(f"{where}: 'local' must be a reason, or left out when the local broker can answer it")
    return CatalogueEntry(api, name, _versions(fields.get("versions", "0+"), api_versions, where), when, local)


def _versions(text: str | int | None, api_versions: list[int], where: str) -> VersionRange:
    try:
        versions = VersionRange.parse(text, where=where)
    except SpecError as problem:
        raise CatalogueError(str(problem)) from None
    if not any(version in versions for version in api_versions):
        raise CatalogueError(f"{where}: versions {text!r} select none of the API's versions "
                             f"({api_versions[0]}-{api_versions[-1]})")
    return versions
