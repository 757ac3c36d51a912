"""Reading suite and template files: YAML that keeps the line of every mapping, key and list item, so
that every problem is reported with its file, line and dotted key.

Suites are YAML 1.2-like here: only true/false are booleans (YAML 1.1 would read ``on`` as one).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import yaml


class SuiteError(Exception):
    def __init__(self, path: str, line: int, key: str, message: str):
        super().__init__(f"{path}:{line}: {key}: {message}")
        self.path, self.line, self.key, self.message = str(path), line, key, message



# ------------------------------------------------------------------------------ YAML with lines
class _Mapping(dict):
    line = 0
    key_lines: dict
    # On an expanded step: where the suite wrote it (a template's steps: the `use:` step), the template
    # it comes from, and the keys the suite's `use:` step gave it (the schema checked those already).
    origin: list | None = None
    template: str | None = None
    given: frozenset = frozenset()


class _Sequence(list):
    line = 0
    item_lines: list


# libyaml's parser where PyYAML was built with it (a run reads every suite: 2 s of a run's start in Python)
if TYPE_CHECKING:
    from yaml import SafeLoader as _SafeLoader
else:
    _SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _LineLoader(_SafeLoader):
    """Keeps the line of every mapping, key and list item (1-based) for error messages."""

    def construct_mapping(self, node, deep=False):
        mapping = _Mapping(super().construct_mapping(node, deep=True))
        mapping.line = node.start_mark.line + 1
        mapping.key_lines = {self.construct_object(key, deep=True): key.start_mark.line + 1
                             for key, _ in node.value}
        return mapping

    def construct_sequence(self, node, deep=False):
        sequence = _Sequence(super().construct_sequence(node, deep=True))
        sequence.line = node.start_mark.line + 1
        sequence.item_lines = [item.start_mark.line + 1 for item in node.value]
        return sequence


# YAML 1.1 reads on/off/yes/no as booleans, which turns `retry: {on: [...]}` into {True: [...]}.
# Suites are YAML 1.2-like here: only true/false are booleans.
_LineLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in _SafeLoader.yaml_implicit_resolvers.items()
}
_LineLoader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                                  list("tTfF"))
_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _LineLoader.construct_mapping)
_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _LineLoader.construct_sequence)


def line_of(document, path) -> int:
    """The line of the deepest node on ``path`` (keys and indexes) that the document knows."""
    node, line = document, getattr(document, "line", 1)
    for part in path:
        if isinstance(node, _Mapping) and part in node:
            line = node.key_lines.get(part, line)
            node = node[part]
        elif isinstance(node, _Sequence) and isinstance(part, int) and part < len(node):
            line = node.item_lines[part]
            node = node[part]
        else:
            break
    return line


def dotted(path) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top)"


def read_yaml(path: Path):
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        return None, SuiteError(str(path), 0, "(file)", f"cannot read: {error}")
    try:
        return yaml.load(text, Loader=_LineLoader), None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 1 if mark else 0
        return None, SuiteError(str(path), line, "(yaml)", str(getattr(error, "problem", error)))
