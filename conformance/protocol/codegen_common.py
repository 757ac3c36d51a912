"""What both code generators need to know about a message at one version.

The codec compiles each message version twice (see :mod:`codec`): a fast encoder and decoder
(:mod:`fast_codegen`) and careful ones (:mod:`careful_codegen`) that say exactly which field is
wrong. Both read the spec through a :class:`SpecView`, so they agree on which fields exist, which
are tagged, how lengths are written and what a missing field defaults to.
"""

from __future__ import annotations

import struct
from types import CodeType
from typing import Any, Callable, Iterator

from . import primitives
from .exceptions import SpecError
from .schema import FieldSpec, MessageSpec

UNKNOWN_TAGGED = "_unknown_tagged"

FIXED_CODES = {"bool": "?", "int8": "b", "int16": "h", "uint16": "H", "int32": "i",
               "uint32": "I", "int64": "q", "float64": "d", "uuid": "16s"}
INTEGER_TYPES = {"int8", "int16", "uint16", "int32", "uint32", "int64"}
MAXIMUM_UNSIZED_ITEMS = 1_000_000  # arrays whose items may take no bytes: a sanity limit

SourceCompiler = Callable[[str, str], CodeType]  # (source, file name) -> the code compile() makes of it


def _compile(source: str, filename: str) -> CodeType:
    return compile(source, filename, "exec")


_compiler: SourceCompiler = _compile


def use_compiler(compiler: SourceCompiler | None) -> None:
    """How generated source becomes code in this process: ``compiler`` (an entry point's cache of code objects,
    :mod:`conformance.code_cache`), or compile() itself with None. This package reads and writes no file."""
    global _compiler
    _compiler = compiler or _compile


def compile_source(source: str, filename: str) -> CodeType:
    return _compiler(source, filename)


def default_value(field: FieldSpec, version: int) -> Any:
    """The value a field takes when a message leaves it out (the spec's default, else the type's)."""
    nullable = version in field.nullable_versions
    text = field.default
    kind = field.type
    if field.is_array:
        return None if text == "null" else []
    if field.is_struct:
        return None if text == "null" else {}
    if text == "null":
        if not nullable:
            raise SpecError(f"{field.name}: default null but not nullable at version {version}")
        return None
    if kind in INTEGER_TYPES:
        if text in (None, ""):
            return 0
        text = str(text)
        return int(text, 16) if text.lower().startswith(("0x", "-0x")) else int(text)
    if kind == "bool":
        return str(text).lower() == "true" if text is not None else False
    if kind == "float64":
        return float(text) if text not in (None, "") else 0.0
    if kind == "string":
        return "" if text is None else str(text)
    if kind == "uuid":
        return primitives.ZERO_UUID
    if kind in ("bytes", "records"):
        return None if nullable and kind == "records" else b""
    raise SpecError(f"{field.name}: no default for type {kind!r}")


def fixed_groups(fields: list[FieldSpec], packable: Callable[[FieldSpec], bool]) -> Iterator[list[FieldSpec]]:
    """Consecutive fields ``packable`` accepts as one group (one struct call), the others alone."""
    group: list[FieldSpec] = []
    for field in fields:
        if packable(field):
            group.append(field)
            continue
        if group:
            yield group
            group = []
        yield [field]
    if group:
        yield group


class SpecView:
    """One message at one version, plus the namespace of constants its generated code uses."""

    def __init__(self, message: MessageSpec, version: int):
        self.message = message
        self.version = version
        self.namespace: dict[str, Any] = {}
        self.counter = 0

    def constant(self, value: object, hint: str = "c") -> str:
        self.counter += 1
        name = f"{hint}{self.counter}"
        self.namespace[name] = value
        return name

    def flexible(self, field: FieldSpec | None = None) -> bool:
        if field is not None and field.flexible_versions is not None:
            return self.version in field.flexible_versions
        return self.version in self.message.flexible_versions

    def present(self, fields: list[FieldSpec]) -> tuple[list[FieldSpec], list[FieldSpec]]:
        """Split a struct's fields at this version into (regular, tagged-sorted-by-tag)."""
        regular, tagged = [], []
        for field in fields:
            if self.version not in field.versions:
                continue
            if self.flexible() and self.version in field.tagged_versions:
                tagged.append(field)
            elif self.version not in field.tagged_versions:
                regular.append(field)
        return regular, sorted(tagged, key=lambda f: f.tag or 0)  # tagged fields always have a tag

    def struct_fields(self, field: FieldSpec) -> list[FieldSpec]:
        if field.fields is not None:
            return field.fields
        return self.message.struct(field.element_type, field.name).fields

    @staticmethod
    def is_fixed(field: FieldSpec) -> bool:
        return not field.is_array and field.type in FIXED_CODES

    def nullable(self, field: FieldSpec) -> bool:
        return self.version in field.nullable_versions

    def minimum_size(self, field: FieldSpec) -> int:
        """The fewest bytes one item of an array field can take (for sanity checks of counts)."""
        kind = field.element_type
        if kind in FIXED_CODES:
            return struct.calcsize(">" + FIXED_CODES[kind])
        if kind == "string":
            return 1 if self.flexible(field) else 2
        if kind in ("bytes", "records"):
            return 1 if self.flexible(field) else 4
        regular, _ = self.present(self.struct_fields(field))
        total = 1 if self.flexible() else 0
        for child in regular:
            if child.is_array:
                total += 1 if self.flexible(child) else 4
            elif child.is_struct:
                total += 1 if self.nullable(child) else 0
            else:
                total += self.minimum_size(child)
        return total

    def default_instance(self, field: FieldSpec) -> Any:
        """A field's default as a value; a struct's is a dict holding every field it has."""
        value = default_value(field, self.version)
        if field.is_struct and not field.is_array and value is not None:
            regular, tagged = self.present(self.struct_fields(field))
            return {child.attribute: self.default_instance(child) for child in regular + tagged}
        return value

    def fresh_default(self, field: FieldSpec) -> str:
        """An expression building a field's default anew (decoded values must not share lists or dicts)."""
        value = default_value(field, self.version)
        if field.is_array:
            return "None" if value is None else "[]"
        if field.is_struct:
            if value is None:
                return "None"
            regular, tagged = self.present(self.struct_fields(field))
            entries = ", ".join(f"{child.attribute!r}: {self.fresh_default(child)}" for child in regular + tagged)
            return "{" + entries + "}"
        return self.constant(value, "d")
