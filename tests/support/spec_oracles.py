"""Normalise Kafka JSON message specs into per-version views, and locate oracles.

Kafka's message specs are JSON with ``//`` comments.  Two copies of a spec can
spell the same thing differently ("0+" versus "0-17" when 17 is the newest
version, a struct inline versus in ``commonStructs``), so specs are compared
version by version: for each version ``v`` we list, in order, every field
present at ``v`` with the properties that hold at ``v``.

This module is deliberately independent of ``tools/build_specs.py`` (which has
its own comment stripper), so that a bug in the build script cannot hide
itself from the agreement test.
"""

from __future__ import annotations

import json
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
SPEC_DIR = REPO_ROOT / "conformance" / "protocol" / "specs"
REFERENCE_421 = (
    Path(__file__).resolve().parents[3] / "shared" / "reference" / "kafka-4.2.1-message-specs"
)
KAFKA_PYTHON_VERSION = "3.0.12"
JAR_SPEC_PREFIX = "common/message/"


# --------------------------------------------------------------------------
# Parsing


def strip_comments(text: str) -> str:
    """Remove ``//`` and ``/* */`` comments that lie outside JSON strings."""
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if c == '"':
                in_string = False
            i += 1
        elif c == '"':
            in_string = True
            out.append(c)
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise ValueError("unterminated block comment")
            i = j + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def loads(text: str) -> dict[str, Any]:
    return json.loads(strip_comments(text))


# --------------------------------------------------------------------------
# Version ranges


@dataclass(frozen=True)
class Range:
    lo: int | None  # None: the empty range ("none")
    hi: int | None  # None: open-ended ("N+")

    @classmethod
    def parse(cls, spec: str | None) -> "Range":
        if spec is None:
            return NONE
        s = str(spec).strip()
        if s == "none" or s == "":
            return NONE
        if s.endswith("+"):
            return cls(int(s[:-1]), None)
        if "-" in s:
            a, b = s.split("-", 1)
            return cls(int(a), int(b))
        return cls(int(s), int(s))

    def __contains__(self, v: int) -> bool:
        if self.lo is None:
            return False
        return v >= self.lo and (self.hi is None or v <= self.hi)

    def versions(self) -> range:
        if self.lo is None:
            return range(0)
        if self.hi is None:
            raise ValueError("open-ended range has no finite version list")
        return range(self.lo, self.hi + 1)


NONE = Range(None, None)


# --------------------------------------------------------------------------
# Per-version view

_INT_TYPES = {"int8", "int16", "uint16", "int32", "uint32", "int64"}
_KNOWN_FIELD_KEYS = {
    "name", "type", "versions", "nullableVersions", "taggedVersions", "tag",
    "default", "mapKey", "entityType", "ignorable", "zeroCopy",
    "flexibleVersions", "fields", "about",
}


def _norm_default(ftype: str, value: Any) -> Any:
    """Canonical spelling of a default: "-1" and -1 are the same default."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    s = str(value).strip()
    if ftype in _INT_TYPES:
        try:
            return int(s, 0)
        except ValueError:
            return s
    if ftype == "float64":
        try:
            return float(s)
        except ValueError:
            return s
    if ftype == "bool":
        return s.lower()
    return s


@dataclass(frozen=True)
class FieldAt:
    """One field as it stands at one version."""

    path: str
    type: str
    nullable: bool
    tag: int | None  # tag number if the field is tagged at this version
    default: Any
    map_key: bool
    entity_type: str | None
    ignorable: bool
    zero_copy: bool
    flexible: bool | None  # field-level flexibleVersions (headers only), else None
    extra: tuple  # any key this module does not know, so nothing slips by silently

    def describe(self) -> str:
        parts = [f"{self.path}: {self.type}"]
        if self.nullable:
            parts.append("nullable")
        if self.tag is not None:
            parts.append(f"tag={self.tag}")
        if self.default is not None:
            parts.append(f"default={self.default!r}")
        if self.map_key:
            parts.append("mapKey")
        if self.entity_type:
            parts.append(f"entityType={self.entity_type}")
        if self.ignorable:
            parts.append("ignorable")
        if self.zero_copy:
            parts.append("zeroCopy")
        if self.flexible is not None:
            parts.append(f"flexible={self.flexible}")
        if self.extra:
            parts.append(f"extra={self.extra}")
        return " ".join(parts)


def _struct_name(ftype: str) -> str:
    return ftype[2:] if ftype.startswith("[]") else ftype


class Spec:
    """A parsed spec with helpers for per-version views."""

    def __init__(self, data: dict[str, Any], origin: str):
        self.data = data
        self.origin = origin
        self.name: str = data["name"]
        self.valid = Range.parse(data.get("validVersions"))
        self.flexible = Range.parse(data.get("flexibleVersions", "none"))
        self.common = {s["name"]: s for s in data.get("commonStructs", [])}

    def valid_versions(self) -> list[int]:
        return list(self.valid.versions())

    def meta(self) -> dict[str, Any]:
        """Top-level facts other than fields, versions and x- keys."""
        d = self.data
        return {
            "apiKey": d.get("apiKey"),
            "type": d.get("type"),
            "name": d.get("name"),
            "listeners": sorted(d.get("listeners", [])) if "listeners" in d else None,
            "latestVersionUnstable": bool(d.get("latestVersionUnstable", False)),
            "commonStructs": sorted(self.common),
            "extra": sorted(
                k for k in d
                if not k.startswith("x-") and k not in {
                    "apiKey", "type", "name", "listeners", "latestVersionUnstable",
                    "validVersions", "flexibleVersions", "fields", "commonStructs",
                }
            ),
        }

    def view(self, v: int) -> tuple[bool, list[FieldAt]]:
        """(flexible at v, ordered fields present at v)."""
        out: list[FieldAt] = []
        self._walk(self.data.get("fields", []), v, "", out, ())
        return (v in self.flexible, out)

    def _walk(self, fields, v, prefix, out, stack):
        for f in fields:
            if v not in Range.parse(f.get("versions")):
                continue
            path = prefix + f["name"]
            ftype = f["type"]
            tag = None
            if v in Range.parse(f.get("taggedVersions")):
                tag = int(f["tag"]) if "tag" in f else -1
            extra = tuple(sorted(
                (k, json.dumps(f[k], sort_keys=True))
                for k in f if k not in _KNOWN_FIELD_KEYS and not k.startswith("x-")
            ))
            fv = f.get("flexibleVersions")
            out.append(FieldAt(
                path=path,
                type=ftype,
                nullable=v in Range.parse(f.get("nullableVersions")),
                tag=tag,
                default=_norm_default(ftype, f.get("default")),
                map_key=bool(f.get("mapKey", False)),
                entity_type=f.get("entityType"),
                ignorable=bool(f.get("ignorable", False)),
                zero_copy=bool(f.get("zeroCopy", False)),
                flexible=None if fv is None else v in Range.parse(fv),
                extra=extra,
            ))
            children = f.get("fields")
            inner = stack
            if children is None:
                common = self.common.get(_struct_name(ftype))
                if common is not None and common["name"] not in stack:
                    if v not in Range.parse(common.get("versions", "0+")):
                        continue
                    children = common.get("fields", [])
                    inner = stack + (common["name"],)
            if children:
                self._walk(children, v, path + ".", out, inner)


_ATTRS = (
    "type", "nullable", "tag", "default", "map_key", "entity_type", "ignorable",
    "zero_copy", "flexible", "extra",
)


def _rename(path: str, renames: dict[str, str]) -> str:
    """Apply theirs-path -> ours-path renames (a renamed struct renames its children)."""
    for old, new in renames.items():
        if path == old:
            return new
        if path.startswith(old + "."):
            return new + path[len(old):]
    return path


def diff_views(
    ours: Spec,
    theirs: Spec,
    versions: list[int],
    renames: dict[str, str] | None = None,
    ignored: set[tuple[str, str]] | None = None,
    used: set | None = None,
) -> list[str]:
    """Differences between two specs on the given versions, one line each.

    ``renames`` maps a field path in ``theirs`` to its path in ``ours``;
    ``ignored`` holds (ours path, attribute) pairs whose difference is known.
    Allowances that were needed are added to ``used``.
    """
    renames = renames or {}
    ignored = ignored or set()
    problems: list[str] = []
    for v in versions:
        flex_a, fa = ours.view(v)
        flex_b, fb = theirs.view(v)
        if flex_a != flex_b:
            problems.append(f"v{v}: flexible ours={flex_a} theirs={flex_b}")
        fb_renamed = []
        for f in fb:
            new = _rename(f.path, renames)
            if new != f.path and used is not None:
                used.add(("rename", f.path))
            fb_renamed.append((new, f))
        da = {f.path: f for f in fa}
        db = {p: f for p, f in fb_renamed}
        for p in [f.path for f in fa if f.path not in db]:
            problems.append(f"v{v}: only ours: {da[p].describe()}")
        for p in [p for p, _ in fb_renamed if p not in da]:
            problems.append(f"v{v}: only theirs: {db[p].describe()}")
        for f in fa:
            g = db.get(f.path)
            if g is None:
                continue
            for attr in _ATTRS:
                a, b = getattr(f, attr), getattr(g, attr)
                if a == b:
                    continue
                if (f.path, attr) in ignored:
                    if used is not None:
                        used.add((f.path, attr))
                    continue
                problems.append(f"v{v}: {f.path}: {attr} ours={a!r} theirs={b!r}")
        order_a = [f.path for f in fa if f.path in db]
        order_b = [p for p, _ in fb_renamed if p in da]
        if order_a != order_b:
            problems.append(f"v{v}: field order differs: ours {order_a} theirs {order_b}")
    return problems


# --------------------------------------------------------------------------
# Bundled specs and oracles


def bundled_spec_files() -> list[Path]:
    return sorted(SPEC_DIR.glob("*.json"))


def load_path(path: Path) -> Spec:
    return Spec(loads(path.read_text(encoding="utf-8")), str(path))


def maven_repo() -> Path:
    env = os.environ.get("MAVEN_REPO_LOCAL")
    return Path(env) if env else Path.home() / ".m2" / "repository"


def kafka_clients_jar(version: str) -> Path:
    return (
        maven_repo() / "org" / "apache" / "kafka" / "kafka-clients" / version
        / f"kafka-clients-{version}.jar"
    )


class JarOracle:
    def __init__(self, jar: Path):
        self.jar = jar
        self._zip = zipfile.ZipFile(jar)
        self.names = {
            Path(n).stem for n in self._zip.namelist()
            if n.startswith(JAR_SPEC_PREFIX) and n.endswith(".json")
        }

    def get(self, name: str) -> Spec | None:
        if name not in self.names:
            return None
        text = self._zip.read(f"{JAR_SPEC_PREFIX}{name}.json").decode("utf-8")
        return Spec(loads(text), f"{self.jar}!{JAR_SPEC_PREFIX}{name}.json")


class DirOracle:
    def __init__(self, directory: Path):
        self.dir = directory
        self.names = {p.stem for p in directory.glob("*.json")}

    def get(self, name: str) -> Spec | None:
        if name not in self.names:
            return None
        return load_path(self.dir / f"{name}.json")


def kafka_python_resources() -> tuple[Path | None, str]:
    """Directory of kafka-python's bundled specs, or (None, reason).

    Found through the installed distribution's files, without importing
    kafka (whose import loads its own schemas and warns).
    """
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        dist = distribution("kafka-python")
    except PackageNotFoundError:
        return None, (
            f"kafka-python is not installed (pip install kafka-python=={KAFKA_PYTHON_VERSION})"
        )
    if dist.version != KAFKA_PYTHON_VERSION:
        return None, (
            f"kafka-python {dist.version} is installed; this oracle is pinned to "
            f"{KAFKA_PYTHON_VERSION}"
        )
    d = Path(str(dist.locate_file("kafka/protocol/schemas/resources")))
    if d.is_dir() and any(d.glob("*.json")):
        return d, f"kafka-python {dist.version}"
    return None, f"kafka-python {dist.version} ships no kafka/protocol/schemas/resources/*.json"
