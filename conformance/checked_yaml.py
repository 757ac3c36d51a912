"""A YAML file the user writes (a capabilities file, a node-control file, the known-bugs ledger) read and checked
against its JSON Schema, so that every such file reports a problem the same way: file, line and field.

Nothing of the harness is imported here: the ledger, the lowest of its readers, sits right above it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml


class CheckedYamlError(ValueError):
    """A file that cannot be read, is not YAML, or breaks its schema: ``path:line: field: message``."""

    def __init__(self, path: str, line: int, field: str, message: str):
        super().__init__(f"{path}:{line}: {field}: {message}")
        self.path, self.line, self.field, self.message = path, line, field, message


def load(path: str | Path, schema: dict[str, Any], *, hide_values_under: Sequence[str] = ()) -> Any:
    """The file's data once it meets ``schema`` (JSON Schema 2020-12); else :class:`CheckedYamlError` for the first
    problem (by field path). Under a top-level key of ``hide_values_under`` the message never quotes the value
    (an environment's values are secrets)."""
    import jsonschema  # a dependency of the harness, imported where a file is read (not on every start)

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CheckedYamlError(str(path), 0, "(file)", f"cannot read: {error}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        raise CheckedYamlError(str(path), mark.line + 1 if mark else 0, "(yaml)",
                               str(getattr(error, "problem", None) or error)) from None
    problems = sorted(jsonschema.Draft202012Validator(schema).iter_errors(data), key=lambda error: list(error.path))
    if problems:
        first = problems[0]
        where = list(first.path)
        hidden = bool(where) and where[0] in hide_values_under
        message = f"not a {first.validator_value}" if hidden and first.validator == "type" else (
            "not as the schema says" if hidden else first.message)
        raise CheckedYamlError(str(path), line_of(text, where), dotted(where), message)
    return data


def line_of(text: str, where: Sequence[str | int]) -> int:
    """The 1-based line of the deepest node on ``where`` (keys and indexes) the YAML text has."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return 0
    line = node.start_mark.line + 1 if node is not None else 1
    for part in where:
        if isinstance(node, yaml.MappingNode):
            found = [(key, value) for key, value in node.value if key.value == str(part)]
            if not found:
                break
            key, node = found[0]
            line = key.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line


def dotted(where: Sequence[str | int]) -> str:
    """``apis.EndTxn``, ``transaction_versions[1]``; ``(top)`` for the document itself (as suite errors spell it)."""
    text = ""
    for part in where:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top)"
