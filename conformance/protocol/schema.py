"""Load message specs written in Apache Kafka's JSON message-spec format.

The format is the one Kafka keeps in ``clients/src/main/resources/common/message`` and that KIPs
quote: JSON with ``//`` comments, an ``apiKey``, ``validVersions`` and ``flexibleVersions`` per
message, and fields that carry their own version ranges. A :class:`SpecRegistry` holds the bundled
specs and any overlays (draft KIPs' specs from a directory or a plugin) that add or replace APIs.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from .. import resources
from .exceptions import SpecError

BUNDLED_SPECS = resources.message_specs()

PRIMITIVE_TYPES = frozenset(
    {"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64",
     "string", "bytes", "uuid", "records"}
)


@dataclass(frozen=True)
class VersionRange:
    """An inclusive range of versions; ``high`` is None for an open range such as ``3+``."""

    low: int
    high: int | None

    NONE: "VersionRange" = None  # type: ignore[assignment]  # set below: the empty range

    @classmethod
    def parse(cls, text: str | int | None, *, where: str = "") -> "VersionRange":
        if text is None:
            return cls.NONE
        text = str(text).strip()
        if text == "none":
            return cls.NONE
        match = re.fullmatch(r"(\d+)(\+|-(\d+))?", text)
        if not match:
            raise SpecError(f"{where}: bad version range {text!r} (expected 'N', 'N+', 'N-M' or 'none')")
        low = int(match.group(1))
        if match.group(2) == "+":
            return cls(low, None)
        if match.group(3) is not None:
            return cls(low, int(match.group(3)))
        return cls(low, low)

    def __contains__(self, version: int) -> bool:
        return self.low <= version and (self.high is None or version <= self.high)

    @property
    def empty(self) -> bool:
        return self.high is not None and self.high < self.low

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.high is None:
            return f"{self.low}+"
        return str(self.low) if self.low == self.high else f"{self.low}-{self.high}"


VersionRange.NONE = VersionRange(0, -1)


def snake_case(name: str) -> str:
    """Kafka's CamelCase field names as Python identifiers: ``ProducerId`` -> ``producer_id``."""
    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return name.lower()


@dataclass
class FieldSpec:
    name: str
    type: str  # as written: "int32", "[]string", "[]TopicData", "SomeStruct"
    versions: VersionRange
    nullable_versions: VersionRange = VersionRange.NONE
    tagged_versions: VersionRange = VersionRange.NONE
    tag: int | None = None
    default: str | None = None
    ignorable: bool = False
    entity_type: str | None = None
    map_key: bool = False
    flexible_versions: VersionRange | None = None  # a per-field override (RequestHeader.ClientId)
    fields: list["FieldSpec"] | None = None  # inline struct definition

    @property
    def attribute(self) -> str:
        return snake_case(self.name)

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.element_type not in PRIMITIVE_TYPES


@dataclass
class StructSpec:
    name: str
    versions: VersionRange
    fields: list[FieldSpec]


@dataclass
class MessageSpec:
    """One ``*Request``/``*Response``/header spec file."""

    name: str
    type: str  # "request", "response", "header" or "data"
    api_key: int | None
    valid_versions: VersionRange
    flexible_versions: VersionRange
    fields: list[FieldSpec]
    common_structs: dict[str, StructSpec] = field(default_factory=dict)
    source: str = ""
    extra: dict[str, Any] = field(default_factory=dict)  # keys the codec does not use (listeners, x-source ...)

    @property
    def api_name(self) -> str:
        """``ProduceRequest`` -> ``Produce``."""
        for suffix in ("Request", "Response"):
            if self.name.endswith(suffix) and self.type in ("request", "response"):
                return self.name[: -len(suffix)]
        return self.name

    def versions(self) -> list[int]:
        if self.valid_versions.empty:
            return []
        high = self.valid_versions.high
        if high is None:
            raise SpecError(f"{self.source}: validVersions of {self.name} must be bounded")
        return list(range(self.valid_versions.low, high + 1))

    def struct(self, name: str, where: str) -> StructSpec:
        try:
            return self.common_structs[name]
        except KeyError:
            raise SpecError(f"{self.source}: {where} refers to unknown struct {name!r}") from None


def strip_json_comments(text: str) -> str:
    """Remove ``//`` comments outside JSON strings, keeping line numbers for error messages."""
    out: list[str] = []
    in_string = escaped = False
    index = 0
    while index < len(text):
        char = text[index]
        if in_string:
            out.append(char)
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
            out.append(char)
        elif text.startswith("//", index):
            end = text.find("\n", index)
            if end < 0:
                break
            index = end
            continue
        elif text.startswith("/*", index):
            end = text.find("*/", index + 2)
            comment = text[index: len(text) if end < 0 else end + 2]
            out.append("\n" * comment.count("\n"))
            index += len(comment)
            continue
        else:
            out.append(char)
        index += 1
    return "".join(out)


_KNOWN_FIELD_KEYS = {
    "name", "type", "versions", "nullableVersions", "taggedVersions", "tag", "default", "ignorable",
    "entityType", "mapKey", "flexibleVersions", "fields", "about", "zeroCopy",
}


def _parse_field(raw: dict[str, Any], where: str) -> FieldSpec:
    if not isinstance(raw, dict):
        raise SpecError(f"{where}: a field must be a JSON object")
    for key in ("name", "type"):
        if key not in raw:
            raise SpecError(f"{where}: field without {key!r}")
    where = f"{where}.{raw['name']}"
    unknown = set(raw) - _KNOWN_FIELD_KEYS
    if unknown:
        raise SpecError(f"{where}: unknown keys {sorted(unknown)}")
    if "versions" not in raw:
        raise SpecError(f"{where}: field without 'versions'")
    spec = FieldSpec(
        name=raw["name"],
        type=raw["type"],
        versions=VersionRange.parse(raw["versions"], where=where),
        nullable_versions=VersionRange.parse(raw.get("nullableVersions"), where=where),
        tagged_versions=VersionRange.parse(raw.get("taggedVersions"), where=where),
        tag=raw.get("tag"),
        default=None if raw.get("default") is None else str(raw["default"]).lower()
        if isinstance(raw.get("default"), bool) else raw.get("default"),
        ignorable=bool(raw.get("ignorable", False)),
        entity_type=raw.get("entityType"),
        map_key=bool(raw.get("mapKey", False)),
        flexible_versions=VersionRange.parse(raw["flexibleVersions"], where=where)
        if "flexibleVersions" in raw else None,
        fields=[_parse_field(child, where) for child in raw["fields"]] if "fields" in raw else None,
    )
    if (spec.tag is None) != spec.tagged_versions.empty:
        raise SpecError(f"{where}: 'tag' and 'taggedVersions' go together")
    if spec.fields is None and spec.is_struct and not spec.element_type[:1].isupper():
        raise SpecError(f"{where}: unknown type {spec.type!r}")
    return spec


def parse_spec(text: str, source: str = "<string>") -> MessageSpec:
    """Parse one spec file's text; errors name the source and the field path."""
    try:
        raw = json.loads(strip_json_comments(text))
    except json.JSONDecodeError as error:
        raise SpecError(f"{source}:{error.lineno}:{error.colno}: not valid JSON: {error.msg}") from None
    if not isinstance(raw, dict):
        raise SpecError(f"{source}: a message spec must be a JSON object")
    for key in ("name", "type", "validVersions"):
        if key not in raw:
            raise SpecError(f"{source}: missing {key!r}")
    name = raw["name"]
    where = f"{source}: {name}"
    common = {}
    for struct in raw.get("commonStructs", []):
        common[struct["name"]] = StructSpec(
            name=struct["name"],
            versions=VersionRange.parse(struct.get("versions", "0+"), where=where),
            fields=[_parse_field(child, f"{where}.{struct['name']}") for child in struct["fields"]],
        )
    spec = MessageSpec(
        name=name,
        type=raw["type"],
        api_key=raw.get("apiKey"),
        valid_versions=VersionRange.parse(raw["validVersions"], where=where),
        flexible_versions=VersionRange.parse(raw.get("flexibleVersions", "none"), where=where),
        fields=[_parse_field(child, where) for child in raw.get("fields", [])],
        common_structs=common,
        source=source,
        extra={k: v for k, v in raw.items() if k not in {
            "name", "type", "apiKey", "validVersions", "flexibleVersions", "fields", "commonStructs"}},
    )
    if spec.type in ("request", "response") and spec.api_key is None:
        raise SpecError(f"{where}: a {spec.type} needs an apiKey")
    return spec


def load_spec_file(path: Path) -> MessageSpec:
    return parse_spec(Path(path).read_text(encoding="utf-8"), str(path))


@dataclass
class ApiSpecs:
    """The request and response specs of one API."""

    request: MessageSpec
    response: MessageSpec

    @property
    def name(self) -> str:
        return self.request.api_name

    @property
    def api_key(self) -> int:
        return self.request.api_key  # type: ignore[return-value]

    def versions(self) -> list[int]:
        return self.request.versions()


class SpecRegistry:
    """All known APIs by name and key. Later ``add``s replace earlier definitions (overlays)."""

    def __init__(self) -> None:
        self._messages: dict[str, MessageSpec] = {}
        self.generation = 0  # bumped on every change, so compiled codecs know to recompile
        self._names_by_key: tuple[int, dict[int, str]] = (-1, {})
        self._apis: dict[str | int, ApiSpecs] = {}  # api() answers, valid for the current generation

    def add(self, spec: MessageSpec) -> None:
        self._messages[spec.name] = spec
        self.generation += 1
        self._apis = {}

    def load_dir(self, directory: Path | str) -> list[MessageSpec]:
        directory = Path(directory)
        if not directory.is_dir():
            raise SpecError(f"{directory}: spec overlay directory does not exist")
        loaded = [load_spec_file(path) for path in sorted(directory.glob("*.json"))]
        for spec in loaded:
            self.add(spec)
        return loaded

    def message(self, name: str) -> MessageSpec:
        try:
            return self._messages[name]
        except KeyError:
            raise SpecError(f"no message spec named {name!r}") from None

    def api(self, name_or_key: str | int) -> ApiSpecs:
        found = self._apis.get(name_or_key)  # every exchange asks several times: encode, headers, decode
        if found is None:
            found = self._apis[name_or_key] = self._api(name_or_key)
        return found

    def _api(self, name_or_key: str | int) -> ApiSpecs:
        name = self.api_name(name_or_key)
        request = self._messages.get(f"{name}Request")
        response = self._messages.get(f"{name}Response")
        if request is None or response is None:
            raise SpecError(f"API {name!r} needs both {name}Request and {name}Response specs")
        return ApiSpecs(request, response)

    def api_name(self, name_or_key: str | int) -> str:
        if isinstance(name_or_key, int) or str(name_or_key).isdigit():
            key = int(name_or_key)
            if self._names_by_key[0] != self.generation:  # rebuilt after overlays change the registry
                self._names_by_key = (self.generation, {spec.api_key: spec.api_name for spec in
                                                        self._messages.values()
                                                        if spec.type == "request" and spec.api_key is not None})
            try:
                return self._names_by_key[1][key]
            except KeyError:
                raise SpecError(f"no API with key {key}") from None
        name = str(name_or_key)
        if f"{name}Request" in self._messages:
            return name
        lowered = name.replace("_", "").lower()
        for spec in self._messages.values():
            if spec.type == "request" and spec.api_name.lower() == lowered:
                return spec.api_name
        raise SpecError(f"unknown API {name!r}; known: {', '.join(self.api_names())}")

    def api_names(self) -> list[str]:
        return sorted(spec.api_name for spec in self._messages.values() if spec.type == "request")

    def apis(self) -> Iterable[ApiSpecs]:
        for name in self.api_names():
            yield self.api(name)


def bundled_registry(overlays: Iterable[Path | str] = ()) -> SpecRegistry:
    """The bundled specs, then each overlay directory in order."""
    registry = SpecRegistry()
    registry.load_dir(BUNDLED_SPECS)
    overlaid_by: dict[str, Path] = {}
    for directory in overlays:
        for spec in registry.load_dir(directory):
            # Two drafts of one message cannot share a codec: the later would silently drop the other.
            if spec.name in overlaid_by:
                raise SpecError(f"{spec.name} is redefined by two overlays, {overlaid_by[spec.name]} and "
                                f"{directory}; load one draft of a message at a time")
            overlaid_by[spec.name] = Path(directory)
    return registry
