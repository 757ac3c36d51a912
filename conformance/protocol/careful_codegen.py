"""The careful encoder and decoder of a message version: slower, but exact about what is wrong.

Each struct becomes a function that tracks which group of fields it is working on, so a failure
names the field path and byte offset (``DecodeError``) or the field path and the reason
(``EncodeError``). The codec runs these only when the fast code (:mod:`fast_codegen`) fails, to
give the error, or when a message has to be encoded leniently: fields left out take their
defaults, UUIDs may be strings, and in malleable mode any field may be a
:class:`~.primitives.Raw` to write verbatim (for deliberate malformations).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from . import primitives
from .codegen_common import FIXED_CODES, UNKNOWN_TAGGED, SpecView, compile_source, default_value, fixed_groups
from .exceptions import DecodeError, EncodeError
from .schema import FieldSpec, MessageSpec


class CarefulGenerator(SpecView):
    """Writes the Python source of one message version's careful encoder and decoder."""

    def __init__(self, message: MessageSpec, version: int, malleable: bool):
        super().__init__(message, version)
        self.malleable = malleable
        self.lines: list[str] = []
        self.namespace.update({
            "pr": primitives, "Raw": primitives.Raw, "DecodeError": DecodeError,
            "EncodeError": EncodeError, "struct": struct,
            "uuid_from": lambda data: uuid.UUID(bytes=data), "uuid_bytes": primitives.uuid_bytes,
            "UNKNOWN_TAGGED": UNKNOWN_TAGGED, "short_field": short_field,
        })
        self.post_exec: list[tuple[str, str]] = []  # (constant, struct encoder): the default's bytes

    # ---------------------------------------------------------------------- groups
    def groups(self, fields: list[FieldSpec]) -> Iterator[list[FieldSpec]]:
        """Consecutive fixed-size fields as one group (one struct call), others alone."""
        return fixed_groups(fields, lambda field: self.is_fixed(field) and not self.malleable)

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
        widths: list[tuple[Any, ...]] = []  # per group: ((field, type, bytes), ...) of a fixed-size group, else ()
        body: list[str] = []
        names: list[tuple[str, str]] = []
        for group in self.groups(regular):
            labels.append(",".join(f.attribute for f in group))
            widths.append(tuple((f.attribute, f.type, struct.calcsize(">" + FIXED_CODES[f.type])) for f in group)
                          if self.is_fixed(group[0]) and not self.malleable else ())
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
            widths.append(())
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
        width_name = self.constant(tuple(widths), "widths")
        self.lines.append(f"def {name}(b, p):")
        self.lines.append("    g = -1; start = p")
        self.lines.append("    try:")
        self.lines.extend("    " + line for line in body)
        self.lines.append("    except DecodeError as error:")
        # a nested struct's decoder already named its own full path; a primitive's error is named here
        self.lines.append(f"        raise DecodeError(error.reason, error.offset, error.path or {path!r} + '.' + {label_name}[g]) from None")
        self.lines.append("    except (struct.error, IndexError, ValueError) as error:")
        self.lines.append(f"        field, at, reason = short_field({label_name}[g], {width_name}[g], len(b), start, error)")
        self.lines.append(f"        raise DecodeError(reason, at, {path!r} + '.' + field) from None")
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
    def compile(self) -> tuple[Callable[[dict[str, Any]], bytes], Callable[[bytes, int], tuple[dict[str, Any], int]]]:
        """(encode(message) -> bytes, decode(buffer, offset) -> (message, end))."""
        encoder = self.encode_struct(self.message.fields, self.message.name)
        decoder = self.decode_struct(self.message.fields, self.message.name)
        source = "\n".join(self.lines)
        exec(compile_source(source, f"<careful codec {self.message.name} v{self.version}>"),  # noqa: S102 - from specs
             self.namespace)
        for constant, struct_encoder in self.post_exec:
            out: list[bytes] = []
            self.namespace[struct_encoder](out, {})
            self.namespace[constant] = b"".join(out)
        encode_struct = self.namespace[encoder]
        decode_struct = self.namespace[decoder]
        top = self.message.name

        def encode(message: dict[str, Any]) -> bytes:
            out: list[bytes] = []
            encode_struct(out, message)
            return b"".join(out)

        def decode(buffer: bytes, offset: int = 0) -> tuple[dict[str, Any], int]:
            try:
                decoded: tuple[dict[str, Any], int] = decode_struct(buffer, offset)
                return decoded
            except DecodeError:
                raise
            except Exception as error:  # a decoder bug must still surface as the codec's own error
                raise DecodeError(f"unexpected {type(error).__name__}: {error}", offset, top) from error

        return encode, decode


def short_field(label: str, widths: tuple[Any, ...], size: int, start: int, error: Exception) -> tuple[str, int, str]:
    """Which field of a group the bytes ran out in, where it starts, and why: a group of fixed-size fields is
    read in one go, so the field is found from the widths (a response that leaves one field out names it)."""
    at = start
    for field, kind, width in widths:
        if at + width > size:
            return field, at, f"{field} ({kind}) needs {width} bytes, {max(0, size - at)} left"
        at += width
    return label, start, f"{label} needs more bytes than the {max(0, size - start)} left ({error})"
