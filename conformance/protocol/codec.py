"""Encode and decode any message of any version, compiled from its spec.

Walking the spec for every message would be slow, so each (message, version) is compiled once into
a pair of Python functions specialised for it: consecutive fixed-size fields become one
``struct`` call, everything else calls the readers and writers in :mod:`primitives`. There is one
code path for every API: specs loaded at run time (overlays, draft KIPs) compile the same way.

Messages are plain dicts keyed by snake_case field names. Decoded messages hold every field the
version defines; unknown tagged fields are kept under ``_unknown_tagged`` ({tag: bytes}) and
written back on encode. A :class:`~.primitives.Raw` value in place of any field is written verbatim
(for deliberate malformations).
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from typing import Callable

from . import primitives
from .exceptions import DecodeError, EncodeError, ProtocolError, SpecError
from .schema import FieldSpec, MessageSpec, SpecRegistry, VersionRange, bundled_registry

UNKNOWN_TAGGED = "_unknown_tagged"

FIXED_CODES = {"bool": "?", "int8": "b", "int16": "h", "uint16": "H", "int32": "i",
               "uint32": "I", "int64": "q", "float64": "d", "uuid": "16s"}
INTEGER_TYPES = {"int8", "int16", "uint16", "int32", "uint32", "int64"}


def default_value(field: FieldSpec, version: int):
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


@dataclass
class _Compiled:
    encode: Callable[[dict], bytes]
    decode: Callable[[bytes, int], tuple[dict, int]]


class _Generator:
    """Writes the Python source of one message version's encoder and decoder."""

    def __init__(self, message: MessageSpec, version: int, malleable: bool):
        self.message = message
        self.version = version
        self.malleable = malleable
        self.lines: list[str] = []
        self.namespace: dict = {
            "pr": primitives, "Raw": primitives.Raw, "DecodeError": DecodeError,
            "EncodeError": EncodeError, "ProtocolError": ProtocolError, "struct": struct,
            "uuid_from": lambda data: uuid.UUID(bytes=data), "uuid_bytes": primitives.uuid_bytes,
            "UNKNOWN_TAGGED": UNKNOWN_TAGGED,
        }
        self.counter = 0
        self.min_sizes: dict[str, int] = {}
        self.post_exec: list[tuple[str, str]] = []  # (constant, struct encoder): the default's bytes

    # ---------------------------------------------------------------------- helpers
    def constant(self, value, hint: str = "c") -> str:
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
        return regular, sorted(tagged, key=lambda f: f.tag)

    def struct_fields(self, field: FieldSpec) -> list[FieldSpec]:
        if field.fields is not None:
            return field.fields
        return self.message.struct(field.element_type, field.name).fields

    def is_fixed(self, field: FieldSpec) -> bool:
        return not field.is_array and field.type in FIXED_CODES

    def minimum_size(self, field: FieldSpec) -> int:
        """The fewest bytes one item of an array field can take (for sanity checks of counts)."""
        kind = field.element_type
        if kind in FIXED_CODES:
            return struct.calcsize(">" + FIXED_CODES[kind])
        if kind in ("string",):
            return 1 if self.flexible(field) else 2
        if kind in ("bytes", "records"):
            return 1 if self.flexible(field) else 4
        regular, _ = self.present(self.struct_fields(field))
        total = 1 if self.flexible() else 0
        for child in regular:
            if child.is_array:
                total += 1 if self.flexible(child) else 4
            elif child.is_struct:
                total += 1 if self.version in child.nullable_versions else 0
            else:
                total += self.minimum_size(child)
        return total

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

    # ---------------------------------------------------------------------- groups
    def groups(self, fields: list[FieldSpec]):
        """Consecutive fixed-size fields as one group (one struct call), others alone."""
        group: list[FieldSpec] = []
        for field in fields:
            if self.is_fixed(field) and not self.malleable:
                group.append(field)
                continue
            if group:
                yield group
                group = []
            yield [field]
        if group:
            yield group

    # ---------------------------------------------------------------------- encoder
    def encode_struct(self, fields: list[FieldSpec], path: str) -> str:
        """Emit an encoder function for a struct; returns its name."""
        name = self.constant(None, "enc")
        regular, tagged = self.present(fields)
        labels = []
        body: list[str] = []
        for group in self.groups(regular):
            labels.append(",".join(f.attribute for f in group))
            body.append(f"    g = {len(labels) - 1}")
            if len(group) > 1 or (self.is_fixed(group[0]) and not self.malleable):
                packer = self.constant(struct.Struct(">" + "".join(FIXED_CODES[f.type] for f in group)), "pk")
                args = []
                for f in group:
                    default = self.constant(default_value(f, self.version), "d")
                    value = f"m.get({f.attribute!r}, {default})"
                    args.append(f"uuid_bytes({value})" if f.type == "uuid" else value)
                body.append(f"    out.append({packer}.pack({', '.join(args)}))")
            else:
                field = group[0]
                default = self.constant(default_value(field, self.version), "d")
                body.append(f"    x = m.get({field.attribute!r}, {default})")
                if self.malleable:
                    body.append("    if x.__class__ is Raw: out.append(x.data)")
                    body.append("    else:")
                    body.extend("    " + line for line in self.encode_value(field, "x", f"{path}.{field.attribute}", 1))
                else:
                    body.extend(self.encode_value(field, "x", f"{path}.{field.attribute}", 1))
        if self.flexible():
            labels.append("(tagged fields)")
            body.append(f"    g = {len(labels) - 1}")
            body.append("    tagged = []")
            for field in tagged:
                default_obj = default_value(field, self.version)
                default = self.constant(default_obj, "d")
                body.append(f"    x = m.get({field.attribute!r}, {default})")
                body.append(f"    if x != {default}:")
                body.append("        sub = []")
                if field.is_struct and not field.is_array and default_obj is not None:
                    # Kafka leaves out a tagged struct equal to its default, however it is spelt
                    encoder = self.encode_struct(self.struct_fields(field), f"{path}.{field.attribute}")
                    encoded_default = self.constant(None, "default_bytes")
                    self.post_exec.append((encoded_default, encoder))
                    body.append(f"        {encoder}(sub, x); data = b''.join(sub)")
                    body.append(f"        if data != {encoded_default}: tagged.append(({field.tag}, data))")
                else:
                    body.extend(self.encode_value(field, "x", f"{path}.{field.attribute}", 2, out="sub"))
                    body.append(f"        tagged.append(({field.tag}, b''.join(sub)))")
            body.append("    unknown = m.get(UNKNOWN_TAGGED)")
            body.append("    if unknown:")
            body.append("        tagged.extend((int(t), bytes(v)) for t, v in unknown.items())")
            body.append("        tagged.sort()")
            body.append("    out.append(pr.write_uvarint(len(tagged)))")
            body.append("    for tag, data in tagged:")
            body.append("        out.append(pr.write_uvarint(tag)); out.append(pr.write_uvarint(len(data))); out.append(data)")
        body = body or ["    pass"]
        label_name = self.constant(tuple(labels), "labels")
        self.lines.append(f"def {name}(out, m):")
        self.lines.append("    g = -1")
        self.lines.append("    try:")
        self.lines.extend("    " + line for line in body)
        self.lines.append("    except EncodeError as error:")
        self.lines.append(f"        raise EncodeError(error.reason, {path!r} + '.' + {label_name}[g] + (error.path and '.' + error.path)) from None")
        self.lines.append("    except (AttributeError, KeyError) as error:")
        self.lines.append("        if not isinstance(m, dict):")
        self.lines.append(f"            raise EncodeError('expected a mapping of fields, got ' + repr(m), {path!r}) from None")
        self.lines.append(f"        raise EncodeError(str(error), {path!r} + '.' + {label_name}[g]) from None")
        self.lines.append("    except (struct.error, TypeError, ValueError, OverflowError) as error:")
        self.lines.append(f"        raise EncodeError(str(error), {path!r} + '.' + ({label_name}[g] if g >= 0 else '')) from None")
        self.lines.append("")
        return name

    def encode_value(self, field: FieldSpec, expr: str, path: str, depth: int, out: str = "out") -> list[str]:
        """Lines (at ``depth`` levels of indentation) that append ``expr`` encoded as ``field``."""
        pad = "    " * depth
        nullable = self.version in field.nullable_versions
        compact = self.flexible(field)
        if field.is_array:
            lines = [f"{pad}{out}.append(pr.write_array_length({expr}, {nullable}, {compact}))"]
            lines.append(f"{pad}if {expr} is not None:")
            element = field.element_type
            if field.is_struct:
                encoder = self.encode_struct(self.struct_fields(field), f"{path}[]")
                lines.append(f"{pad}    for item in {expr}: {encoder}({out}, item)")
            elif element in FIXED_CODES and element != "uuid":
                code = FIXED_CODES[element]
                lines.append(f"{pad}    {out}.append(struct.pack('>%d{code}' % len({expr}), *{expr}))")
            else:
                lines.append(f"{pad}    for item in {expr}:")
                lines.extend(self.encode_scalar(element, "item", nullable=False, compact=compact,
                                                pad=pad + "        ", out=out))
            return lines
        if field.is_struct:
            encoder = self.encode_struct(self.struct_fields(field), path)
            if nullable:
                return [f"{pad}if {expr} is None: {out}.append(b'\\xff')",
                        f"{pad}else:", f"{pad}    {out}.append(b'\\x01'); {encoder}({out}, {expr})"]
            return [f"{pad}{encoder}({out}, {expr})"]
        return self.encode_scalar(field.type, expr, nullable, compact, pad, out)

    def encode_scalar(self, kind: str, expr: str, nullable: bool, compact: bool, pad: str, out: str) -> list[str]:
        if kind == "uuid":
            return [f"{pad}{out}.append(uuid_bytes({expr}))"]
        if kind in FIXED_CODES:
            packer = self.constant(struct.Struct(">" + FIXED_CODES[kind]), "pk")
            return [f"{pad}{out}.append({packer}.pack({expr}))"]
        if kind == "string":
            return [f"{pad}{out}.append(pr.write_string({expr}, {nullable}, {compact}))"]
        return [f"{pad}{out}.append(pr.write_bytes({expr}, {nullable}, {compact}))"]

    # ---------------------------------------------------------------------- decoder
    def decode_struct(self, fields: list[FieldSpec], path: str) -> str:
        name = self.constant(None, "dec")
        regular, tagged = self.present(fields)
        labels = []
        body: list[str] = []
        names: list[tuple[str, str]] = []
        for group in self.groups(regular):
            labels.append(",".join(f.attribute for f in group))
            body.append(f"    g = {len(labels) - 1}; start = p")
            variables = []
            for f in group:
                variable = f"v{len(names)}"
                names.append((f.attribute, variable))
                variables.append(variable)
            if self.is_fixed(group[0]) and not self.malleable:
                packer = self.constant(struct.Struct(">" + "".join(FIXED_CODES[f.type] for f in group)), "pk")
                body.append(f"    {', '.join(variables)}{',' if len(variables) == 1 else ''} = {packer}.unpack_from(b, p); p += {packer}.size")
                for f, variable in zip(group, variables):
                    if f.type == "uuid":
                        body.append(f"    {variable} = uuid_from({variable})")
            else:
                body.extend(self.decode_value(group[0], variables[0], f"{path}.{group[0].attribute}", 1))
        unknown_variable = None
        if self.flexible():
            labels.append("(tagged fields)")
            body.append(f"    g = {len(labels) - 1}; start = p")
            tag_vars = []
            for field in tagged:
                variable = f"v{len(names)}"
                names.append((field.attribute, variable))
                tag_vars.append((field, variable))
                body.append(f"    {variable} = {self.fresh_default(field)}")
            unknown_variable = "unknown"
            body.append("    unknown = None")
            body.append("    count, p = pr.read_uvarint(b, p)")
            body.append("    for _ in range(count):")
            body.append("        start = p")
            body.append("        tag, p = pr.read_uvarint(b, p)")
            body.append("        size, p = pr.read_uvarint(b, p)")
            body.append("        end = p + size")
            body.append("        if end > len(b): raise DecodeError('tagged field %d of %d bytes runs past the end' % (tag, size), start)")
            first = True
            for field, variable in tag_vars:
                keyword = "if" if first else "elif"
                first = False
                body.append(f"        {keyword} tag == {field.tag}:")
                body.extend(self.decode_value(field, variable, f"{path}.{field.attribute}", 3))
                body.append("            if p != end: raise DecodeError('tagged field %d: %d bytes declared, %d used' % (tag, size, size + p - end), start)")
            body.append(f"        {'else' if tag_vars else 'if True'}:")
            body.append("            if unknown is None: unknown = {}")
            body.append("            unknown[tag] = b[p:end]; p = end")
        entries = ", ".join(f"{attribute!r}: {variable}" for attribute, variable in names)
        body.append(f"    result = {{{entries}}}")
        if unknown_variable:
            body.append("    if unknown: result[UNKNOWN_TAGGED] = unknown")
        body.append("    return result, p")
        label_name = self.constant(tuple(labels), "labels")
        self.lines.append(f"def {name}(b, p):")
        self.lines.append("    g = -1; start = p")
        self.lines.append("    try:")
        self.lines.extend("    " + line for line in body)
        self.lines.append("    except DecodeError as error:")
        self.lines.append(f"        raise DecodeError(error.reason, error.offset, {path!r} + '.' + {label_name}[g] + (error.path and '.' + error.path)) from None")
        self.lines.append("    except (struct.error, IndexError, ValueError) as error:")
        self.lines.append(f"        raise DecodeError('%s needs more bytes than the %d left (%s)' % ({label_name}[g], max(0, len(b) - start), error), start, {path!r} + '.' + {label_name}[g]) from None")
        self.lines.append("")
        return name

    def decode_value(self, field: FieldSpec, variable: str, path: str, depth: int) -> list[str]:
        pad = "    " * depth
        nullable = self.version in field.nullable_versions
        compact = self.flexible(field)
        if field.is_array:
            minimum = self.minimum_size(field)
            lines = [f"{pad}n, p = pr.read_array_length(b, p, {nullable}, {compact}, {minimum})",
                     f"{pad}if n is None: {variable} = None"]
            element = field.element_type
            if field.is_struct:
                decoder = self.decode_struct(self.struct_fields(field), f"{path}[]")
                lines += [f"{pad}else:",
                          f"{pad}    {variable} = []; append = {variable}.append",
                          f"{pad}    for _ in range(n):",
                          f"{pad}        item, p = {decoder}(b, p); append(item)"]
            elif element in FIXED_CODES and element != "uuid":
                lines += [f"{pad}else: {variable}, p = pr.read_fixed_array(b, p, n, {FIXED_CODES[element]!r})"]
            else:
                lines += [f"{pad}else:",
                          f"{pad}    {variable} = []; append = {variable}.append",
                          f"{pad}    for _ in range(n):"]
                lines += self.decode_scalar(element, "item", False, compact, pad + "        ")
                lines += [f"{pad}        append(item)"]
            return lines
        if field.is_struct:
            decoder = self.decode_struct(self.struct_fields(field), path)
            if nullable:
                return [f"{pad}if b[p] >= 128: {variable} = None; p += 1",
                        f"{pad}else: {variable}, p = {decoder}(b, p + 1)"]
            return [f"{pad}{variable}, p = {decoder}(b, p)"]
        return self.decode_scalar(field.type, variable, nullable, compact, pad)

    def decode_scalar(self, kind: str, variable: str, nullable: bool, compact: bool, pad: str) -> list[str]:
        if kind == "uuid":
            return [f"{pad}{variable}, p = pr.read_uuid(b, p)"]
        if kind in FIXED_CODES:
            packer = self.constant(struct.Struct(">" + FIXED_CODES[kind]), "pk")
            return [f"{pad}{variable}, = {packer}.unpack_from(b, p); p += {packer}.size"]
        if kind == "string":
            return [f"{pad}{variable}, p = pr.read_string(b, p, {nullable}, {compact})"]
        return [f"{pad}{variable}, p = pr.read_bytes(b, p, {nullable}, {compact})"]

    # ---------------------------------------------------------------------- compile
    def compile(self) -> _Compiled:
        encoder = self.encode_struct(self.message.fields, self.message.name)
        decoder = self.decode_struct(self.message.fields, self.message.name)
        source = "\n".join(self.lines)
        code = compile(source, f"<codec {self.message.name} v{self.version}>", "exec")
        exec(code, self.namespace)
        for constant, struct_encoder in self.post_exec:
            out: list[bytes] = []
            self.namespace[struct_encoder](out, {})
            self.namespace[constant] = b"".join(out)
        encode_struct = self.namespace[encoder]
        decode_struct = self.namespace[decoder]
        top = self.message.name

        def encode(message: dict) -> bytes:
            out: list[bytes] = []
            encode_struct(out, message)
            return b"".join(out)

        def decode(buffer: bytes, offset: int = 0) -> tuple[dict, int]:
            try:
                return decode_struct(buffer, offset)
            except DecodeError:
                raise
            except Exception as error:  # a decoder bug must still surface as the codec's own error
                raise DecodeError(f"unexpected {type(error).__name__}: {error}", offset, top) from error

        return _Compiled(encode, decode)


REQUEST, RESPONSE = "request", "response"


class Codec:
    """Encodes and decodes messages of the APIs a :class:`SpecRegistry` knows.

    ``direction`` is ``"request"`` or ``"response"``; ``api`` a name (``InitProducerId``) or key.
    """

    def __init__(self, registry: SpecRegistry | None = None):
        self.registry = registry if registry is not None else bundled_registry()
        self._compiled: dict[tuple[str, int, bool], _Compiled] = {}
        self._generation = self.registry.generation

    def message_spec(self, api: str | int, direction: str) -> MessageSpec:
        specs = self.registry.api(api)
        if direction == REQUEST:
            return specs.request
        if direction == RESPONSE:
            return specs.response
        raise ValueError(f"direction must be 'request' or 'response', not {direction!r}")

    def compiled(self, message: MessageSpec, version: int, malleable: bool = False) -> _Compiled:
        if self._generation != self.registry.generation:
            self._compiled.clear()
            self._generation = self.registry.generation
        key = (message.name, version, malleable)
        found = self._compiled.get(key)
        if found is None:
            if version not in message.valid_versions:
                raise EncodeError(f"{message.name} has no version {version} "
                                  f"(valid: {message.valid_versions})")
            found = self._compiled[key] = _Generator(message, version, malleable).compile()
        return found

    def encode(self, api: str | int, version: int, direction: str, message: dict,
               malleable: bool = False) -> bytes:
        """The body only; see :mod:`frames` for headers and size prefixes."""
        spec = self.message_spec(api, direction)
        return self.compiled(spec, version, malleable).encode(message)

    def decode(self, api: str | int, version: int, direction: str, data: bytes,
               offset: int = 0) -> tuple[dict, int]:
        """Decode a body starting at ``offset``; returns the message and the offset after it."""
        try:
            spec = self.message_spec(api, direction)
        except SpecError as error:  # an API key read from the bytes that no spec defines
            raise DecodeError(str(error), offset) from None
        try:
            compiled = self.compiled(spec, version)
        except EncodeError as error:
            raise DecodeError(error.reason, offset, spec.name) from None
        return compiled.decode(data, offset)

    def encode_message(self, name: str, version: int, message: dict, malleable: bool = False) -> bytes:
        """Encode a message that is not an API body (RequestHeader, ResponseHeader, data specs)."""
        spec = self.registry.message(name)
        return self.compiled(spec, version, malleable).encode(message)

    def decode_message(self, name: str, version: int, data: bytes, offset: int = 0) -> tuple[dict, int]:
        spec = self.registry.message(name)
        try:
            compiled = self.compiled(spec, version)
        except EncodeError as error:
            raise DecodeError(error.reason, offset, spec.name) from None
        return compiled.decode(data, offset)

    def is_flexible(self, api: str | int, version: int, direction: str = REQUEST) -> bool:
        return version in self.message_spec(api, direction).flexible_versions

    def versions(self, api: str | int) -> VersionRange:
        return self.registry.api(api).request.valid_versions


def has_raw(message) -> bool:
    """Whether any value anywhere in a message is a Raw override (then the malleable encoder runs)."""
    stack = [message]
    while stack:
        value = stack.pop()
        if value.__class__ is primitives.Raw:
            return True
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(item for item in value if isinstance(item, (dict, list, primitives.Raw)))
    return False


_default: Codec | None = None


def default_codec() -> Codec:
    """A process-wide codec over the bundled specs (compiled functions are shared)."""
    global _default
    if _default is None:
        _default = Codec()
    return _default
