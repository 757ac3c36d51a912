"""The documentation states what the code does: the pages made from the code are fresh.

The generated pages (the CLI and suite format reference, coverage, deviations) come from
tools/build_docs.py; ``python tools/build_docs.py`` rewrites them. docs/generated/findings.md is made from
runs on brokers, which the repository does not keep, so it is not regenerated here.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _build_docs():
    spec = importlib.util.spec_from_file_location("build_docs", ROOT / "tools" / "build_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build_docs = _build_docs()


def _table_keys(page: Path, heading: str | None = None) -> list[str]:
    """The first column of the tables under ``heading`` (the whole page when None), backticks removed."""
    text = page.read_text(encoding="utf-8")
    if heading is not None:
        text = text.split(f"\n{heading}\n", 1)[1]
        text = re.split(r"\n## ", text, maxsplit=1)[0]
    keys = []
    for line in text.splitlines():
        cells = line.split("|")
        if len(cells) > 2 and line.startswith("| `"):
            keys += re.findall(r"`([^`]+)`", cells[1])
    return keys


# ------------------------------------------------------------------------------ generated pages
@pytest.mark.parametrize("name", sorted(build_docs.PAGES))
def test_generated_page_is_fresh(name):
    committed = (DOCS / name).read_text(encoding="utf-8")
    assert committed == build_docs.PAGES[name](), f"docs/{name} is stale: run python tools/build_docs.py"


def test_the_cli_reference_names_every_command_and_option():
    from conformance.cli import build_parser

    page = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    parser = build_parser()
    [commands] = [action for action in parser._actions if action.__class__.__name__ == "_SubParsersAction"]
    for name, command in commands.choices.items():
        assert f"## `conformance {name}`" in page
        for action in command._actions:
            for option in ([] if action.__class__.__name__ == "_HelpAction" else action.option_strings):
                assert f"`{option}`" in page, (name, option)


def test_every_suite_schema_key_is_described():
    """The suite format page is made from the schema; a key without a description would be a bare row."""
    schema = json.loads((ROOT / "conformance" / "suite" / "suite.schema.json").read_text(encoding="utf-8"))
    bare = [row for row in build_docs.suite_format_markdown().splitlines()
            if row.startswith("| `") and row.rstrip().endswith("|  |")]
    assert bare == []
    documented = set(_table_keys(DOCS / "reference" / "suite-format.md"))
    assert build_docs.schema_keys(schema) <= documented
