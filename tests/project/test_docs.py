"""The documentation states what the code does: generated pages are fresh, reference pages list what the
code defines, the README's promises hold, and the docs site builds without requesting anything from
elsewhere.

The generated pages (the CLI and suite format reference, coverage, deviations) come from
tools/build_docs.py; ``python tools/build_docs.py`` rewrites them. docs/generated/findings.md is made from
runs on brokers, which the repository does not keep, so it is not regenerated here.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
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


def test_the_suite_example_of_the_how_to_lints(tmp_path, capsys):
    from conformance.cli import main

    text = (DOCS / "how-to" / "write-a-suite.md").read_text(encoding="utf-8")
    example = re.search(r"```yaml\n(suite:.*?)```", text, re.S).group(1)
    (tmp_path / "end-txn.yaml").write_text(example, encoding="utf-8")
    assert main(["lint", str(tmp_path / "end-txn.yaml")]) == 0, capsys.readouterr()


# ------------------------------------------------------------------------------ reference pages checked
def test_the_results_format_lists_every_field_of_a_results_line():
    from conformance.results.record import FIELDS, SCHEMA_VERSION

    page = DOCS / "reference" / "results-format.md"
    documented = _table_keys(page, "## Fields")
    assert sorted(documented) == sorted(FIELDS), "docs/reference/results-format.md and the results record differ"
    assert len(documented) == len(set(documented))
    assert f"`schema_version` **{SCHEMA_VERSION}**" in page.read_text(encoding="utf-8")


def test_the_results_format_lists_every_field_of_a_transcript_entry():
    from conformance.client.transcript import Exchange

    exchange = Exchange(connection="bootstrap", api="EndTxn", api_key=26, version=3, correlation_id=1,
                        request={}, request_bytes=b"", sent_at=0.0)
    documented = _table_keys(DOCS / "reference" / "results-format.md", "## Transcript entries")
    assert sorted(documented) == sorted(exchange.to_json())


def test_the_targets_reference_names_every_bundled_kind_and_option(capsys):
    from conformance.cli import main
    from conformance.targets.kafka.broker import FEATURE_OPTIONS
    from conformance.targets.kafka.cluster_target import OPTIONS as CLUSTER_OPTIONS
    from conformance.targets.kafka.security import CLIENT_AUTH, MECHANISMS, PROTOCOLS, SECURITY_OPTIONS

    page = (DOCS / "reference" / "targets.md").read_text(encoding="utf-8")
    cells = {cell.strip() for line in page.splitlines() if line.startswith("|") for cell in line.split("|")}
    kinds = {cell[1:-1] for cell in cells if re.fullmatch(r"`[^`]+`", cell)}
    capsys.readouterr()
    assert main(["targets"]) == 0
    listed = [line.split("\t")[0] for line in capsys.readouterr().out.splitlines()[1:]]
    assert "kafka" in listed and "host:port" in listed
    assert sorted(set(listed) - kinds) == [], "target kinds missing from docs/reference/targets.md"
    for option in (*FEATURE_OPTIONS, *SECURITY_OPTIONS, *CLUSTER_OPTIONS):
        assert f"`{option}=" in page, option
    for value in (*PROTOCOLS, *MECHANISMS, *CLIENT_AUTH):
        assert f"`{value}`" in page, value


def test_the_faults_reference_names_every_fault():
    from conformance.proxy.rules import CONTROL, FAULTS
    from conformance.targets.nodes import FAULTS as CLUSTER_FAULTS

    documented = set(_table_keys(DOCS / "reference" / "faults.md"))
    expected = {"restart", "disconnect", *CLUSTER_FAULTS, *(f"proxy.{name}" for name in (*FAULTS, *CONTROL))}
    assert expected - documented == set()


def test_the_client_config_reference_names_every_key_the_client_reads():
    sources = [ROOT / "conformance" / "client" / name for name in ("security.py", "oauth.py")]
    keys = {key for source in sources
            for key in re.findall(r'"((?:ssl|sasl|security|enable|https)\.[a-z0-9._]+)"', source.read_text())}
    from conformance.targets.principals import PRINCIPAL_KEY

    page = (DOCS / "reference" / "client-config.md").read_text(encoding="utf-8")
    missing = sorted(key for key in keys | {PRINCIPAL_KEY} if f"`{key}" not in page)
    assert missing == []


def test_the_environment_reference_names_every_variable_the_harness_reads():
    read = set()
    for source in (ROOT / "conformance").rglob("*.py"):
        text = source.read_text(encoding="utf-8")
        read |= set(re.findall(r'environ(?:\.get\(|\.setdefault\(|\[)\s*"([A-Z][A-Z0-9_]+)"', text))
        read |= set(re.findall(r'getenv\(\s*"([A-Z][A-Z0-9_]+)"', text))
        read |= set(re.findall(r'"(CONFORMANCE_[A-Z0-9_]+)"', text))
    not_ours = {"PYTEST_XDIST_WORKER", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_HOME"}
    documented = set(_table_keys(DOCS / "reference" / "environment.md"))
    assert sorted(read - not_ours - documented) == []


def test_the_certification_how_to_names_every_level():
    import yaml

    levels = yaml.safe_load((ROOT / "conformance" / "report" / "certify" / "levels.yaml").read_text())["levels"]
    page = (DOCS / "how-to" / "certify.md").read_text(encoding="utf-8")
    assert [level["name"] for level in levels if level["name"] not in page] == []


# ------------------------------------------------------------------------------ the README
def test_the_readme_is_short_and_keeps_its_two_setup_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 70  # a front door: what it is, a case, a departure, two commands, links
    assert 'pip install -e ".[dev,analysis]" && conformance run' in readme
    command = re.search(r"^(python -m pytest[^#\n]*?)\s*#", readme, re.M)
    assert command, "the README's test command"
    ci = (ROOT / ".ci" / "run").read_text().splitlines()[-1].split("#")[0].strip()
    assert ci == command.group(1)  # CI calls exactly the README's test command


def test_nothing_users_read_cites_the_project_s_issue_numbers():
    """Code, suites, docs and fixtures say what happened, never "issue" and its number: no user can look one up."""
    cited = re.compile(r"\b[Ii]ssues? #?\d+")
    found = []
    for folder in ("conformance", "suites", "docs", "plugins", "fixtures", "tools", "tests"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in (".py", ".md", ".yaml", ".html", ".j2", ".txt") and path.is_file():
                for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                    if cited.search(line) and "github.com" not in line and "pytest-xdist#" not in line:
                        found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert found == []


def test_every_relative_link_of_the_readme_and_docs_resolves():
    pages = [ROOT / "README.md", *DOCS.rglob("*.md")]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if "://" not in target and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []


# ------------------------------------------------------------------------------ the site
class _Requests(HTMLParser):
    """Addresses a page makes the browser fetch by itself (not links a reader may follow)."""

    LOADING = {("script", "src"), ("link", "href"), ("img", "src"), ("iframe", "src"), ("source", "src"),
               ("video", "src"), ("audio", "src"), ("embed", "src"), ("object", "data"), ("img", "srcset")}

    def __init__(self):
        super().__init__()
        self.found: list[str] = []
        self.mermaid = False

    def handle_starttag(self, tag, attributes):
        for name, value in attributes:
            if (tag, name) in self.LOADING and value and re.match(r"(https?:)?//", value.strip()):
                self.found.append(f"<{tag} {name}={value}>")
            if name == "class" and value and "mermaid" in value.split():
                self.mermaid = True  # mkdocs-material fetches mermaid from a CDN for such blocks


def test_the_docs_site_builds_and_requests_nothing_from_elsewhere(tmp_path):
    mkdocs = shutil.which("mkdocs")
    if mkdocs is None:
        pytest.skip('mkdocs-material is part of the dev extra: pip install -e ".[dev]"')
    site = tmp_path / "site"
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)], cwd=ROOT,
                           capture_output=True, text=True, timeout=300,
                           env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert (site / "index.html").is_file() and (site / "reference" / "cli" / "index.html").is_file()
    external = []
    for page in site.rglob("*.html"):
        parser = _Requests()
        parser.feed(page.read_text(encoding="utf-8"))
        external += [f"{page.relative_to(site)}: {found}" for found in parser.found]
        if parser.mermaid:
            external.append(f"{page.relative_to(site)}: a mermaid diagram (loaded from a CDN)")
    for sheet in site.rglob("*.css"):
        external += [f"{sheet.relative_to(site)}: {found}" for found in
                     re.findall(r"(?:url\(\s*['\"]?|@import\s+['\"])((?:https?:)?//[^'\")\s]+)", sheet.read_text())]
    assert external == []
