"""The fast encoder and decoder of a message version: one straight-line function each.

Everything a message version contains is inlined into a single function: nested structs and
array items, single-byte fast paths for varint lengths and tagged-field counts, string and bytes
reads, runs of fixed-size fields as one ``struct`` call. The fast code does every check the
careful code (:mod:`careful_codegen`) does, but says nothing about what failed: on any exception
it hands the same input to the careful code, which either succeeds (a lenient input such as a
field left out, or a UUID given as a string) or raises the error naming the field and offset.
Calling with ``fallback=False`` runs the fast code alone (tests compare the two).

The encoder reads a regular field as ``message.get(name, default)``, the default the careful code
would use, so a message leaving optional fields out (most requests a suite writes) stays fast.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from . import primitives
from .codegen_common import (FIXED_CODES, MAXIMUM_UNSIZED_ITEMS, UNKNOWN_TAGGED, SpecView, compile_source, default_value,
                             fixed_groups)
from .exceptions import SpecError
from .schema import FieldSpec, MessageSpec

VARINT_BYTES = tuple(bytes((value,)) for value in range(128))  # the one-byte varints
ARRAY_STRUCTS = {code: tuple(struct.Struct(f">{count}{code}") for count in range(64))
                 for code in set(FIXED_CODES.values()) - {"16s"}}
UUID_CACHE_LIMIT = 4096


class Malformed(Exception):
    """Raised by the fast decoder on a check that fails; the careful decoder then says why."""


_uuids: dict[bytes, uuid.UUID] = {}


def new_uuid(data: bytes) -> uuid.UUID:
    """A UUID from 16 bytes, kept for reuse: the same topic ids come back in message after message."""
    if len(data) != 16:
        raise Malformed
    if len(_uuids) >= UUID_CACHE_LIMIT:
        _uuids.clear()
    value = _uuids[data] = uuid.UUID(bytes=data)
    return value


def tagged_section(known: list[tuple[int, bytes]] | None, unknown: dict[int, bytes] | None) -> bytes:
    """The count and entries of a tagged-field section, unknown fields merged in by tag."""
    entries = list(known or ())
    if unknown:
        entries.extend((int(tag), bytes(data)) for tag, data in unknown.items())
        entries.sort()
    write = primitives.write_uvarint
    out = [write(len(entries))]
    for tag, data in entries:
        out += (write(tag), write(len(data)), data)
    return b"".join(out)


class FastGenerator(SpecView):
    """Writes the source of one message version's fast ``encode`` and ``decode`` functions."""

    def __init__(self, message: MessageSpec, version: int, careful_encode: Callable[..., bytes],
                 careful_decode: Callable[..., tuple[dict[str, Any], int]]):
        super().__init__(message, version)
        self.namespace.update({
            "careful_encode": careful_encode, "careful_decode": careful_decode, "Malformed": Malformed,
            "read_uvarint": primitives.read_uvarint, "write_uvarint": primitives.write_uvarint,
            "VARINT": VARINT_BYTES,
            "UUIDS": _uuids, "new_uuid": new_uuid, "tagged_section": tagged_section, "Struct": struct.Struct,
            "UNKNOWN_TAGGED": UNKNOWN_TAGGED, "bytes_type": bytes, "EMPTY": {},
        })
        self.variables = 0
        self.extra_functions: list[list[str]] = []
        self.after_exec: list[tuple[str, str]] = []  # (constant, function): its result

    def variable(self, hint: str) -> str:
        self.variables += 1
        return f"{hint}{self.variables}"

    def groups(self, fields: list[FieldSpec]) -> Iterator[list[FieldSpec]]:
        return fixed_groups(fields, self.is_fixed)

    def array_method(self, code: str, method: str) -> str:
        """A constant: per item count below 64, the bound pack or unpack_from of that many items."""
        return self.constant(tuple(getattr(packer, method) for packer in ARRAY_STRUCTS[code]), "arrays")

    def packer(self, codes: str, method: str) -> tuple[str, int]:
        """(a constant bound to the ``struct`` method for these codes, the size they take)."""
        packer = struct.Struct(">" + codes)
        return self.constant(getattr(packer, method), "unpack" if method == "unpack_from" else "pack"), packer.size

    # ---------------------------------------------------------------------- decoder
    def decode_function(self) -> list[str]:
        lines = ["def decode(b, p=0, fallback=True):",
                 "    if b.__class__ is not bytes_type: b = bytes(b)",
                 "    start = p",
                 "    try:",
                 "        L = len(b)"]
        lines += self.decode_struct(self.message.fields, "result", " " * 8)
        lines += ["        if p > L: raise Malformed  # a string, bytes or unknown tagged field ran past the end",
                  "        return result, p",
                  "    except Exception:",
                  "        if not fallback: raise",
                  "        return careful_decode(b, start)"]
        return lines

    def decode_struct(self, fields: list[FieldSpec], target: str, pad: str, append: str | None = None) -> list[str]:
        """Lines decoding a struct at p into ``target``, or into ``append(...)`` when given."""
        regular, tagged = self.present(fields)
        lines: list[str] = []
        entries: list[tuple[str, str]] = []
        for group in self.groups(regular):
            if self.is_fixed(group[0]):
                names = [self.variable("v") for _ in group]
                unpack, size = self.packer("".join(FIXED_CODES[f.type] for f in group), "unpack_from")
                comma = "," if len(names) == 1 else ""
                lines.append(f"{pad}{', '.join(names)}{comma} = {unpack}(b, p); p += {size}")
                for field, name in zip(group, names):
                    if field.type == "uuid":
                        lines.append(f"{pad}{name} = UUIDS.get({name}) or new_uuid({name})")
                    entries.append((field.attribute, name))
            else:
                name = self.variable("v")
                lines += self.decode_value(group[0], name, pad)
                entries.append((group[0].attribute, name))
        if not self.flexible():
            return lines + [self.deliver(entries, target, pad, append)]
        count, unknown = self.variable("count"), self.variable("unknown")
        tagged_names = [(field, self.variable("v")) for field in tagged]
        lines += [f"{pad}{count} = b[p]; p += 1", f"{pad}if {count}:"]
        inner = pad + "    "
        lines += [f"{inner}{name} = {self.fresh_default(field)}" for field, name in tagged_names]
        lines += self.decode_tagged(tagged_names, count, unknown, inner)
        lines += [self.deliver(entries + [(field.attribute, name) for field, name in tagged_names],
                               target, inner, None),
                  f"{inner}if {unknown}: {target}[UNKNOWN_TAGGED] = {unknown}"]
        if append:
            lines.append(f"{inner}{append}({target})")
        # the usual case, no tagged fields at all: defaults straight into the dict
        defaults = [(field.attribute, self.fresh_default(field)) for field in tagged]
        return lines + [f"{pad}else:", self.deliver(entries + defaults, target, inner, append)]

    @staticmethod
    def deliver(entries: list[tuple[str, str]], target: str, pad: str, append: str | None) -> str:
        source = "{" + ", ".join(f"{attribute!r}: {name}" for attribute, name in entries) + "}"
        return f"{pad}{append}({source})" if append else f"{pad}{target} = {source}"

    def decode_tagged(self, tagged_names: list[tuple[FieldSpec, str]], count: str, unknown: str,
                      pad: str) -> list[str]:
        tag, end = self.variable("tag"), self.variable("end")
        lines = [f"{pad}if {count} > 127: {count}, p = read_uvarint(b, p - 1)",
                 f"{pad}{unknown} = None",
                 f"{pad}for _ in range({count}):"]
        inner = pad + "    "
        lines += [f"{inner}{tag} = b[p]; p += 1",
                  f"{inner}if {tag} > 127: {tag}, p = read_uvarint(b, p - 1)",
                  f"{inner}n = b[p]; p += 1",
                  f"{inner}if n > 127: n, p = read_uvarint(b, p - 1)",
                  f"{inner}{end} = p + n"]
        keyword = "if"
        for field, name in tagged_names:
            lines.append(f"{inner}{keyword} {tag} == {field.tag}:")
            lines += self.decode_value(field, name, inner + "    ")
            lines.append(f"{inner}    if p != {end}: raise Malformed")
            keyword = "elif"
        body = inner + "    " if tagged_names else inner
        if tagged_names:
            lines.append(f"{inner}else:")
        lines += [f"{body}if {unknown} is None: {unknown} = {{}}",
                  f"{body}{unknown}[{tag}] = b[p:{end}]; p = {end}"]
        return lines

    def decode_length(self, compact: bool, pad: str, codes: str = "i") -> list[str]:
        """Lines leaving ``n`` = the length or count at p (-1 for null), p after it."""
        if compact:
            return [f"{pad}n = b[p] - 1; p += 1",
                    f"{pad}if n > 126: n, p = read_uvarint(b, p - 1); n -= 1"]
        unpack, size = self.packer(codes, "unpack_from")
        return [f"{pad}n, = {unpack}(b, p); p += {size}"]

    def decode_value(self, field: FieldSpec, name: str, pad: str) -> list[str]:
        nullable = self.nullable(field)
        if field.is_array:
            lines = self.decode_length(self.flexible(field), pad)
            lines += [f"{pad}if n < 0:",
                      f"{pad}    if n != -1: raise Malformed" if nullable else f"{pad}    raise Malformed",
                      f"{pad}    {name} = None" if nullable else "",
                      f"{pad}else:"]
            lines = [line for line in lines if line]
            inner = pad + "    "
            minimum = self.minimum_size(field)
            lines.append(f"{inner}if n * {minimum} > L - p: raise Malformed" if minimum
                         else f"{inner}if n > {MAXIMUM_UNSIZED_ITEMS}: raise Malformed")
            return lines + self.decode_items(field, name, inner)
        if field.is_struct:
            if nullable:
                return [f"{pad}if b[p] > 127: p += 1; {name} = None",
                        f"{pad}else:",
                        f"{pad}    p += 1",
                        *self.decode_struct(self.struct_fields(field), name, pad + "    ")]
            return self.decode_struct(self.struct_fields(field), name, pad)
        return self.decode_scalar(field.type, name, nullable, self.flexible(field), pad)

    def decode_items(self, field: FieldSpec, name: str, pad: str) -> list[str]:
        kind = field.element_type
        if not field.is_struct and kind in FIXED_CODES and kind != "uuid":
            code = FIXED_CODES[kind]
            arrays, size = self.array_method(code, "unpack_from"), struct.calcsize(">" + code)
            return [(f"{pad}{name} = list({arrays}[n](b, p) if n < 64 else Struct('>%d{code}' % n).unpack_from(b, p))"
                     f"; p += {size} * n")]
        append, item = self.variable("append"), self.variable("item")
        lines = [f"{pad}{name} = []; {append} = {name}.append", f"{pad}for _ in range(n):"]
        if field.is_struct:
            return lines + self.decode_struct(self.struct_fields(field), item, pad + "    ", append)
        lines += self.decode_scalar(kind, item, False, self.flexible(field), pad + "    ")
        lines.append(f"{pad}    {append}({item})")
        return lines

    def decode_scalar(self, kind: str, name: str, nullable: bool, compact: bool, pad: str) -> list[str]:
        if kind == "uuid":
            return [f"{pad}{name} = b[p:p + 16]; p += 16",
                    f"{pad}{name} = UUIDS.get({name}) or new_uuid({name})"]
        if kind in FIXED_CODES:
            unpack, size = self.packer(FIXED_CODES[kind], "unpack_from")
            return [f"{pad}{name}, = {unpack}(b, p); p += {size}"]
        text = kind == "string"
        lines = self.decode_length(compact, pad, "h" if text else "i")
        # a read past the end shortens the slice but moves p past L, which the end check catches
        value = "b[p:p + n].decode()" if text else "b[p:p + n]"
        lines += [f"{pad}if n >= 0: {name} = {value}; p += n"]
        if nullable:
            lines += [f"{pad}elif n == -1: {name} = None", f"{pad}else: raise Malformed"]
        else:
            lines.append(f"{pad}else: raise Malformed")
        return lines

    # ---------------------------------------------------------------------- encoder
    def encode_function(self) -> list[str]:
        lines = ["def encode(m, fallback=True):",
                 "    try:",
                 "        out = []; a = out.append"]
        lines += self.encode_struct(self.message.fields, "m", "a", " " * 8)
        lines += ["        return b''.join(out)",
                  "    except Exception:",
                  "        if not fallback: raise",
                  "        return careful_encode(m)"]
        return lines

    def encode_struct(self, fields: list[FieldSpec], source: str, append: str, pad: str) -> list[str]:
        regular, tagged = self.present(fields)
        lines: list[str] = []
        for group in self.groups(regular):
            if self.is_fixed(group[0]):
                pack, _ = self.packer("".join(FIXED_CODES[f.type] for f in group), "pack")
                values = [self.field_of(source, f) + (".bytes" if f.type == "uuid" else "") for f in group]
                lines.append(f"{pad}{append}({pack}({', '.join(values)}))")
            else:
                name = self.variable("x")
                lines.append(f"{pad}{name} = {self.field_of(source, group[0])}")
                lines += self.encode_value(group[0], name, append, pad)
        if self.flexible():
            lines += self.encode_tagged(tagged, source, append, pad)
        return lines

    def field_of(self, source: str, field: FieldSpec) -> str:
        """The field's value, or its default when the message leaves it out, as the careful encoder does:
        a message without its optional fields (most requests a suite writes) stays on the fast path."""
        try:
            default = default_value(field, self.version)
        except SpecError:  # a default the spec cannot give at this version: the careful encoder says why
            return f"{source}[{field.attribute!r}]"
        return f"{source}.get({field.attribute!r}, {self.constant(default, 'd')})"

    def encode_tagged(self, tagged: list[FieldSpec], source: str, append: str, pad: str) -> list[str]:
        found, unknown = self.variable("found"), self.variable("unknown")
        lines = [f"{pad}{found} = None"]
        for field in tagged:
            name, sub, data = self.variable("x"), self.variable("sub"), self.variable("data")
            default = default_value(field, self.version)
            lines.append(f"{pad}{name} = {source}.get({field.attribute!r}, {self.constant(default, 'd')})")
            if field.is_struct and not field.is_array and default is not None:
                # Kafka leaves out a tagged struct equal to its default, however it is spelt
                full = self.constant(self.default_instance(field), "default")
                encoded_default = self.default_bytes(field)
                lines.append(f"{pad}if {name} != {full} and {name} != EMPTY:")
                condition = f"{data} != {encoded_default}"
            else:
                lines.append(f"{pad}if {name} is not None:" if default is None
                             else f"{pad}if {name} != {self.constant(default, 'd')}:")
                condition = None
            inner = pad + "    "
            lines.append(f"{inner}{sub} = []")
            lines += self.encode_value(field, name, f"{sub}.append", inner)
            lines.append(f"{inner}{data} = b''.join({sub})")
            if condition:
                lines.append(f"{inner}if {condition}:")
                inner += "    "
            lines += [f"{inner}if {found} is None: {found} = []",
                      f"{inner}{found}.append(({field.tag}, {data}))"]
        lines += [f"{pad}{unknown} = {source}.get(UNKNOWN_TAGGED)",
                  f"{pad}if {found} is None and not {unknown}: {append}(b'\\x00')",
                  f"{pad}else: {append}(tagged_section({found}, {unknown}))"]
        return lines

    def default_bytes(self, field: FieldSpec) -> str:
        """A constant that will hold the encoding of a struct field's default."""
        constant, function = self.constant(None, "default_bytes"), self.variable("encode_default")
        self.extra_functions.append([f"def {function}():", "    out = []; a = out.append",
                                     f"    m = {self.fresh_default(field)}",
                                     *self.encode_struct(self.struct_fields(field), "m", "a", "    "),
                                     "    return b''.join(out)"])
        self.after_exec.append((constant, function))
        return constant

    def encode_length(self, length: str, compact: bool, append: str, pad: str, codes: str = "i") -> str:
        if compact:
            return f"{pad}k = {length} + 1; {append}(VARINT[k] if k < 128 else write_uvarint(k))"
        pack, _ = self.packer(codes, "pack")
        return f"{pad}{append}({pack}({length}))"

    def encode_value(self, field: FieldSpec, name: str, append: str, pad: str) -> list[str]:
        nullable = self.nullable(field)
        compact = self.flexible(field)
        if field.is_array or field.is_struct:
            null = (b"\x00" if compact else b"\xff\xff\xff\xff") if field.is_array else b"\xff"
            lines, inner = [], pad
            if nullable:
                lines += [f"{pad}if {name} is None: {append}({null!r})", f"{pad}else:"]
                inner = pad + "    "
            if field.is_struct and not field.is_array:
                if nullable:
                    lines.append(f"{inner}{append}(b'\\x01')")
                return lines + self.encode_struct(self.struct_fields(field), name, append, inner)
            lines.append(self.encode_length(f"len({name})", compact, append, inner))
            return lines + self.encode_items(field, name, append, inner)
        return self.encode_scalar(field.type, name, nullable, compact, append, pad)

    def encode_items(self, field: FieldSpec, name: str, append: str, pad: str) -> list[str]:
        kind = field.element_type
        if not field.is_struct and kind in FIXED_CODES and kind != "uuid":
            code = FIXED_CODES[kind]
            arrays = self.array_method(code, "pack")
            return [(f"{pad}k = len({name}); {append}({arrays}[k](*{name}) if k < 64 "
                     f"else Struct('>%d{code}' % k).pack(*{name}))")]
        item = self.variable("item")
        lines = [f"{pad}for {item} in {name}:"]
        if field.is_struct:
            return lines + self.encode_struct(self.struct_fields(field), item, append, pad + "    ")
        return lines + self.encode_scalar(kind, item, False, self.flexible(field), append, pad + "    ")

    def encode_scalar(self, kind: str, name: str, nullable: bool, compact: bool, append: str, pad: str) -> list[str]:
        if kind == "uuid":
            return [f"{pad}{append}({name}.bytes)"]
        if kind in FIXED_CODES:
            pack, _ = self.packer(FIXED_CODES[kind], "pack")
            return [f"{pad}{append}({pack}({name}))"]
        text = kind == "string"
        null = b"\x00" if compact else (b"\xff\xff" if text else b"\xff\xff\xff\xff")
        lines, inner = [], pad
        if nullable:
            lines += [f"{pad}if {name} is None: {append}({null!r})", f"{pad}else:"]
            inner = pad + "    "
        data = name
        if text:
            data = "d"
            lines.append(f"{inner}d = {name}.encode()")
        lines.append(self.encode_length(f"len({data})", compact, append, inner, "h" if text else "i"))
        lines.append(f"{inner}{append}({data})")
        return lines

    # ---------------------------------------------------------------------- compile
    def compile(self) -> tuple[Callable[..., bytes], Callable[..., tuple[dict[str, Any], int]]]:
        """(encode(message, fallback=True) -> bytes, decode(buffer, offset=0, fallback=True) -> (message, end))."""
        lines = self.encode_function() + [""] + self.decode_function()
        for extra in self.extra_functions:
            lines += ["", *extra]
        source = "\n".join(lines)
        code = compile_source(source, f"<fast codec {self.message.name} v{self.version}>")
        exec(code, self.namespace)  # noqa: S102 - source generated from specs
        for constant, function in self.after_exec:
            self.namespace[constant] = self.namespace[function]()
        return self.namespace["encode"], self.namespace["decode"]
