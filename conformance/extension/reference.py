"""Renders docs/reference/hooks.md from the hook specifications, so the page cannot drift from the code.

``python -m conformance.extension.reference docs/reference/hooks.md`` writes it; a test renders it again
and compares. The page is the package's docstring (how a plugin is written), then every hook of
:mod:`.hookspecs` in source order under its section banner, with its signature and docstring, then the
registries and the output contract a plugin meets. Only the reST bits the docstrings use are converted.
"""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path
from typing import Any, Callable

from ..report import ci, sinks
from . import hookspecs, registries

HEADER = ("<!-- Generated from conformance/extension/hookspecs.py by `python -m conformance.extension.reference "
          "docs/reference/hooks.md`; a test keeps it fresh. Edit the docstrings, not this page. -->")
BANNER = re.compile(r"^# -+ (\w[\w ]*)$")
REGISTRY_CLASSES = [registries.TargetRegistry, registries.StepKindRegistry, registries.MatcherRegistry,
                    registries.EmulationRegistry, registries.OutputRegistry]
SINK_CLASSES: list[Any] = [sinks.Output, sinks.FileOutput, sinks.OutputOption, sinks.Sink, sinks.SinkContext, sinks.RunEnd,
                ci.ci_result, ci.CiResult]


def markdown(text: str) -> str:
    """reST as the docstrings write it, as Markdown: roles, double backquotes, ``:param:`` and literal blocks."""
    text = re.sub(r":(?:class|mod|func|meth):`~?\.?([^`]+)`", r"`\1`", text)
    text = text.replace("``", "`")
    text = re.sub(r"^:param (\w+):", r"- `\1`:", text, flags=re.MULTILINE)
    lines, out, in_block = text.split("\n"), [], False
    for index, line in enumerate(lines):
        if in_block and line.strip() and not line.startswith("    "):
            out += ["```", ""]
            in_block = False
        if in_block:
            out.append(line[4:])
            continue
        if line.endswith("::"):
            out.append(line[:-1])
            following = next((later for later in lines[index + 1:] if later.strip()), "")
            out += ["", "```" + ("toml" if following.strip().startswith("[") else "python")]
            in_block = True
            continue
        out.append(line)
    if in_block:
        out.append("```")
    return re.sub(r"```(\w+)\n\n", r"```\1\n", "\n".join(out)).replace("\n\n```\n", "\n```\n")


def _docstring(thing: object) -> str:
    return inspect.cleandoc(thing.__doc__ or "")


def _hooks_by_section() -> list[tuple[str, list[Any]]]:
    """The hooks in source order, each under the banner comment above it."""
    source = inspect.getsource(hookspecs).splitlines()
    banners = [(number, match.group(1).strip()) for number, line in enumerate(source, 1)
               if (match := BANNER.match(line))]
    hooks = sorted((function for name, function in vars(hookspecs).items()
                    if name.startswith("conformance_") and callable(function)),
                   key=lambda function: function.__code__.co_firstlineno)
    sections: list[tuple[str, list[Any]]] = []
    for hook in hooks:
        section = [title for number, title in banners if number < hook.__code__.co_firstlineno][-1]
        if not sections or sections[-1][0] != section:
            sections.append((section, []))
        sections[-1][1].append(hook)
    return sections


def _signature(function: Callable[..., Any]) -> str:
    return f"{function.__name__}{inspect.signature(function)}".replace("'", "")


def _members(cls: type) -> list[str]:
    out = []
    for name, member in vars(cls).items():
        if name.startswith("_") or not callable(member):
            continue
        out.append(f"- `{_signature(member).replace('(self, ', '(').replace('(self)', '()')}`"
                   + (f": {markdown(_docstring(member))}" if member.__doc__ else ""))
    fields = getattr(cls, "__dataclass_fields__", {})
    out += [f"- `{name}: {field.type}`" for name, field in fields.items()]
    return out


def render() -> str:
    from .. import extension

    parts = [HEADER, "", "# Hooks", "", markdown(_docstring(extension).split("\n", 1)[1].strip()), "",
             "## Rules", "", markdown(_docstring(hookspecs).split("\n", 1)[1].strip().removeprefix("Rules:").strip())]
    for section, hooks in _hooks_by_section():
        parts += ["", f"## {section.capitalize()}"]
        for hook in hooks:
            parts += ["", f"### `{hook.__name__}`", "", "```python", _signature(hook), "```", "",
                      markdown(_docstring(hook))]
    parts += ["", "## Registries", "", markdown(_docstring(registries).split("\n", 1)[1].strip())]
    for cls in REGISTRY_CLASSES:
        parts += ["", f"### `{cls.__name__}`", "", *_members(cls)]
    parts += ["", "## The output contract", "", "`conformance.report.sinks`: "
              + markdown(_docstring(sinks).split("\n\n")[0].replace("\n", " ")), "",
              markdown(_docstring(sinks).split("\n\n", 1)[1])]
    for contract in SINK_CLASSES:
        parts += ["", f"### `{contract.__name__}`", "", markdown(_docstring(contract)), "", *_members(contract)]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(parts)).strip() + "\n"


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    if not arguments:
        print(render(), end="")
        return 0
    Path(arguments[0]).write_text(render(), encoding="utf-8")
    print(f"wrote {arguments[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
