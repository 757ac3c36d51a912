"""Write the documents under docs/ that are made from the code, so that they cannot drift from it.

Usage: python tools/build_docs.py          # rewrite every generated page
       python tools/build_docs.py --check  # exit 1, naming the stale pages, when one differs

The pages:

- docs/reference/cli.md: every command and option of ``conformance``, from its argparse parsers;
- docs/reference/suite-format.md: every key of a suite file, from ``conformance/suite/suite.schema.json``
  (the schema the loader validates with), the built-in step kinds and the matchers;
- docs/generated/coverage.md and docs/generated/deviations.md: ``conformance coverage`` and
  ``conformance deviations`` over the bundled suites;
- docs/generated/known-bugs.md: the known-bugs ledger (``conformance/ledger/kafka-bugs.yaml``) with the
  evidence of ``conformance releases --known-bugs`` that ``tools/pin_known_bugs.py`` keeps in
  ``fixtures/known-bugs/evidence.jsonl``;
- docs/generated/benchmarks.md: the records of benchmark runs kept in ``fixtures/benchmarks/``
  (``python -m conformance.bench --record fixtures/benchmarks NAME`` writes one).

docs/generated/findings.md is not made here: it comes from results of runs on brokers
(``conformance findings``), which the repository does not keep.

tests/project/test_docs.py renders each page and compares it with the committed file.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DOCS = ROOT / "docs"
REGENERATE = "python tools/build_docs.py"


# ------------------------------------------------------------------------------ CLI reference
def _cell(text: object) -> str:
    """Text for one Markdown table cell: one line, pipes escaped."""
    text = " ".join(str(text).split()).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("|", "\\|")


def _expanded_help(action: argparse.Action) -> str:
    help_text = action.help or ""
    if "%" in help_text:
        values = dict(vars(action), prog="conformance")
        for name, value in list(values.items()):
            if hasattr(value, "__name__"):
                values[name] = value.__name__
        if values.get("choices") is not None:
            values["choices"] = ", ".join(map(str, values["choices"]))
        help_text = help_text % values
    return help_text


def _argument_name(action: argparse.Action) -> str:
    if action.option_strings:
        return ", ".join(f"`{option}`" for option in action.option_strings)
    return f"`{action.metavar or action.dest}`"


def _argument_value(action: argparse.Action) -> str:
    if action.nargs == 0:
        return ""
    if action.choices is not None and not isinstance(action.choices, dict):
        value = "{" + ",".join(map(str, action.choices)) + "}"
    elif isinstance(action.metavar, tuple):
        value = " ".join(action.metavar)
    else:
        value = action.metavar or action.dest.upper()
    if action.nargs in ("*", "+"):
        value += " ..."
    elif action.nargs == "?":
        value = f"[{value}]"
    repeatable = " (repeatable)" if isinstance(action, argparse._AppendAction) else ""
    return f"`{value}`{repeatable}"


def _argument_default(action: argparse.Action) -> str:
    default = action.default
    if default is None or default is argparse.SUPPRESS or action.nargs == 0 or default == []:
        return ""
    return "`''`" if default == "" else f"`{default}`"


def _subcommands(parser: argparse.ArgumentParser) -> tuple[argparse._SubParsersAction | None, dict[str, str]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            return action, helps
    return None, {}


def _arguments_table(parser: argparse.ArgumentParser) -> list[str]:
    actions = [action for action in parser._actions
               if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction))]
    if not actions:
        return ["No arguments.", ""]
    lines = ["| Argument | Value | Default | Meaning |", "|---|---|---|---|"]
    for action in actions:
        lines.append(f"| {_argument_name(action)} | {_argument_value(action)} | {_argument_default(action)} | "
                     f"{_cell(_expanded_help(action))} |")
    return [*lines, ""]


def _command_section(name: str, parser: argparse.ArgumentParser, summary: str, level: int) -> list[str]:
    lines = [f"{'#' * level} `{name}`", ""]
    text = parser.description or summary
    if text:
        lines += [" ".join(text.split()), ""]
    lines += _arguments_table(parser)
    if parser.epilog:  # examples and notes, laid out by hand: kept as written
        lines += ["```text", textwrap.dedent(parser.epilog).strip("\n"), "```", ""]
    subcommands, helps = _subcommands(parser)
    nested = getattr(parser, "nested_commands", None)  # certify verify, certify register: parsed on their own
    if subcommands is None and nested is not None:
        subcommands, helps = nested, {choice.dest: choice.help or "" for choice in nested._choices_actions}
    if subcommands is not None:
        for child, child_parser in subcommands.choices.items():
            lines += _command_section(f"{name} {child}", child_parser, helps.get(child, ""), level + 1)
    return lines


class _OptionRecorder:
    """Stands in for pytest's option parser: records what the plugin's ``pytest_addoption`` declares."""

    def __init__(self):
        self.options: list[tuple[tuple[str, ...], dict]] = []
        self.ini: list[tuple[str, dict]] = []

    def getgroup(self, name: str, description: str = "") -> "_OptionRecorder":
        return self

    def addoption(self, *names: str, **settings) -> None:
        self.options.append((names, settings))

    def addini(self, name: str, help: str = "", **settings) -> None:  # noqa: A002 - pytest's own keyword
        self.ini.append((name, {"help": help, **settings}))

    def get_plugins(self) -> list:  # as pytest's plugin manager: no session handed in
        return []


def pytest_options_markdown() -> list[str]:
    """The options the harness's pytest plugin adds, found through its ``pytest11`` entry point."""
    from importlib.metadata import entry_points

    [entry] = [entry for entry in entry_points(group="pytest11") if entry.name == "conformance"]
    recorder = _OptionRecorder()
    entry.load().pytest_addoption(recorder, recorder)
    lines = ["## pytest options", "",
             "`python -m pytest` takes these once the package is installed (its `pytest11` entry point loads the",
             "plugin); `conformance run` passes its own options on as these.", "",
             "| Option | Value | Default | Meaning |", "|---|---|---|---|"]
    for names, settings in recorder.options:
        action = argparse.Action(option_strings=list(names), dest=settings.get("dest", names[0]),
                                 nargs=0 if settings.get("action") in ("store_true", "store_false") else None,
                                 default=settings.get("default"), choices=settings.get("choices"),
                                 help=settings.get("help"), metavar=settings.get("metavar"))
        value = _argument_value(action)
        if settings.get("action") == "append":
            value += " (repeatable)"
        lines.append(f"| {_argument_name(action)} | {value} | {_argument_default(action)} | "
                     f"{_cell(_expanded_help(action))} |")
    lines += ["", "Settings in `pytest.ini`, `pyproject.toml` or `tox.ini`:", "",
              "| Setting | Type | Meaning |", "|---|---|---|"]
    lines += [f"| `{name}` | {settings.get('type') or 'string'} | {_cell(settings['help'])} |"
              for name, settings in recorder.ini]
    return [*lines, ""]


# Defaults some options take from a CI system's environment (the Allure executor and build name): the page
# shows them as they are outside CI, so that it renders the same on a laptop and in a CI job.
CI_VARIABLES = ("CI", "CI_NAME", "GITHUB_RUN_ID")


@contextlib.contextmanager
def _outside_ci():
    saved = {name: os.environ.pop(name) for name in CI_VARIABLES if name in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


def cli_markdown() -> str:
    """Every command of ``conformance`` with its arguments, as the parsers define them."""
    from conformance.cli import PYTEST_PASS_THROUGH, build_parser

    with _outside_ci():
        parser = build_parser()
    subcommands, helps = _subcommands(parser)
    assert subcommands is not None
    lines = [
        "# Command line: `conformance`",
        "",
        f"Generated from the command's argparse parsers by `{REGENERATE}`; `tests/project/test_docs.py` fails when",
        "this page and the parsers disagree. `conformance COMMAND --help` prints the same on a terminal.",
        "",
        " ".join((parser.description or "").split()),
        "",
        "| Command | What it does |",
        "|---|---|",
        *(f"| [`{name}`](#conformance-{name}) | {_cell(helps.get(name, ''))} |" for name in subcommands.choices),
        "",
        "Arguments after `--` go to pytest unchanged; only " + " and ".join(f"`{name}`" for name in PYTEST_PASS_THROUGH)
        + " take them.",
        "",
    ]
    for name, child in subcommands.choices.items():
        lines += _command_section(f"conformance {name}", child, helps.get(name, ""), 2)
    lines += pytest_options_markdown()
    return "\n".join(lines).rstrip("\n") + "\n"


# ------------------------------------------------------------------------------ suite format reference
SCHEMA_SECTIONS = (  # (title, where in the schema, what it is)
    ("Suite file", "#", "The top level of a suite file."),
    ("Case", "#/$defs/case", "One entry of `cases`."),
    ("Step", "#/$defs/step", "One entry of a case's `steps` (and of `until.steps`, and of each branch of "
                              "`parallel`). A step has one keyword naming its kind, and the common keys beside it."),
    ("Expectation", "#/$defs/expect", "The `expect` of a step."),
    ("Condition", "#/$defs/when", "The `when` of a step: the step runs only where every condition holds."),
)


def _resolve(schema: dict, node: dict) -> tuple[dict, str | None]:
    reference = node.get("$ref")
    if reference is None:
        return node, None
    name = reference.rsplit("/", 1)[-1]
    return schema["$defs"][name], name


def _type_of(schema: dict, node: dict) -> str:
    target, name = _resolve(schema, node)
    if name in ("step", "steps", "expect", "when", "case"):
        return {"step": "step", "steps": "list of steps", "expect": "expectation", "when": "condition",
                "case": "case"}[name]
    if "enum" in target:
        return " \\| ".join(f"`{value}`" for value in target["enum"])
    kind = target.get("type")
    if kind is None:
        return "any" if not target.get("anyOf") else " or ".join(_type_of(schema, option)
                                                                 for option in target["anyOf"])
    kinds = kind if isinstance(kind, list) else [kind]
    words = []
    for each in kinds:
        if each == "array" and "items" in target:
            words.append(f"list of {_type_of(schema, target['items'])}")
        elif each == "object" and isinstance(target.get("additionalProperties"), dict) \
                and "properties" not in target:
            words.append(f"map of {_type_of(schema, target['additionalProperties'])}")
        else:
            words.append(each)
    return " or ".join(words)


def _description(schema: dict, node: dict) -> str:
    target, _ = _resolve(schema, node)
    parts = [node.get("description") or target.get("description") or ""]
    if "pattern" in target:
        parts.append(f"matches `{target['pattern']}`")
    if "minimum" in target:
        parts.append(f"at least {target['minimum']}")
    return "; ".join(part for part in parts if part)


def _rows(schema: dict, node: dict, prefix: str, stop: set[str]) -> list[str]:
    """One table row per key of ``node``, then its nested keys (``produce.topic``) unless they are a section."""
    rows = []
    required = set(node.get("required", ()))
    for key, child in node.get("properties", {}).items():
        name = f"{prefix}{key}"
        rows.append(f"| `{name}` | {'yes' if key in required else ''} | {_type_of(schema, child)} | "
                    f"{_cell(_description(schema, child))} |")
        target, reference = _resolve(schema, child)
        if reference in stop:
            continue
        if "properties" in target:
            rows += _rows(schema, target, f"{name}.", stop)
        additional = target.get("additionalProperties")
        if isinstance(additional, dict) and "properties" in additional:
            rows += _rows(schema, additional, f"{name}.NAME.", stop)
        items = target.get("items")
        if isinstance(items, dict):
            item_target, item_reference = _resolve(schema, items)
            if item_reference not in stop and "properties" in item_target:
                rows += _rows(schema, item_target, f"{name}[].", stop)
    return rows


def schema_keys(schema: dict) -> set[str]:
    """Every key the page documents, as its rows name it (for the test that compares them with the schema)."""
    keys = set()
    for _, where, _ in SCHEMA_SECTIONS:
        node = schema if where == "#" else schema["$defs"][where.rsplit("/", 1)[-1]]
        for row in _rows(schema, node, "", set(schema["$defs"])):
            keys.add(row.split("`")[1])
    return keys


def suite_format_markdown() -> str:
    """The keys of a suite file, from the JSON Schema the loader validates with."""
    from conformance import resources
    from conformance.suite.matchers import BUILTIN_MATCHERS
    from conformance.runner.steps import BUILTIN_STEP_KINDS

    schema = json.loads(resources.suite_schema().read_text(encoding="utf-8"))
    stop = set(schema["$defs"])
    lines = [
        "# Suite format",
        "",
        f"Generated by `{REGENERATE}` from the JSON Schema the loader validates every suite file with",
        "(`conformance/suite/suite.schema.json`, which editors can use too), the built-in step kinds and the",
        "matchers; `tests/project/test_docs.py` fails when this page and those disagree. How to write a suite, with a",
        "worked example, is in [Write a suite](../how-to/write-a-suite.md); what a case may claim is in",
        "[Write cases a vendor cannot dispute](../how-to/write-sound-cases.md).",
        "",
        "A key with *yes* under Required must be present. Version ranges are written `N`, `N+`, `N-M` or",
        "`none`. Values may use `${...}` expressions (`${topics.out}`, `${pid}`, `${epoch + 1}`,",
        "`${config.NAME}`; `${run}` is the item's own suffix and `${client_id}` the client id of its requests).",
        "",
        "Beyond what the schema checks, `conformance lint` (and every run) refuses unknown API names, error",
        "names and matchers, request fields the API's spec lacks at the versions a case covers, templates",
        "that do not exist, and Kafka's internal names outside `IMPLEMENTATION` cases.",
        "",
    ]
    for title, where, text in SCHEMA_SECTIONS:
        node = schema if where == "#" else schema["$defs"][where.rsplit("/", 1)[-1]]
        lines += [f"## {title}", "", text, "", "| Key | Required | Type | Meaning |", "|---|---|---|---|",
                  *_rows(schema, node, "", stop), ""]
    lines += [
        "## Step kinds",
        "",
        "The keyword that makes a step one kind. These are the built-in ones; plugins register more (see",
        "[Hooks](hooks.md)):",
        "",
        *(f"- `{keyword}`" for keyword in BUILTIN_STEP_KINDS),
        "- `use`: a step template (`suites/templates/*.yaml`), given its parameters under `with`",
        "",
        "## Matchers",
        "",
        "In `expect.fields`, a value is either the expected value itself or a map of matchers, each with its",
        "argument (`{ge: 1}`, `{any_of: [NONE, CONCURRENT_TRANSACTIONS]}`). These are the built-in ones;",
        "plugins register more (see [Hooks](hooks.md)):",
        "",
        ", ".join(f"`{name}`" for name in BUILTIN_MATCHERS),
        "",
    ]
    return "\n".join(lines).rstrip("\n") + "\n"


# ------------------------------------------------------------------------------ generated documents
def _command_output(command: str) -> str:
    """What ``conformance COMMAND`` prints for the bundled suites (the same code path a user runs)."""
    import io

    from conformance import resources
    from conformance.cli import main as conformance

    printed, problems = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(problems):
        code = conformance([command, str(resources.suites())])
    if code != 0 or problems.getvalue():
        raise SystemExit(f"conformance {command} failed ({code}):\n{problems.getvalue()}")
    return printed.getvalue()


def coverage_markdown() -> str:
    return _command_output("coverage")


def deviations_markdown() -> str:
    return _command_output("deviations")


def known_bugs_markdown() -> str:
    """The known-bugs ledger with the evidence of runs on the releases each entry is checked on."""
    from conformance.report.known_bugs import known_bugs_markdown as render

    evidence = ROOT / "fixtures" / "known-bugs" / "evidence.jsonl"
    lines = evidence.read_text(encoding="utf-8").splitlines() if evidence.is_file() else []
    return render([json.loads(line) for line in lines if line.strip()])


def benchmarks_markdown() -> str:
    """The benchmark figures: the records of benchmark runs kept in ``fixtures/benchmarks/``."""
    from conformance.bench.page import page_from

    return page_from(ROOT / "fixtures" / "benchmarks")


PAGES: dict[str, Callable[[], str]] = {
    "reference/cli.md": cli_markdown,
    "reference/suite-format.md": suite_format_markdown,
    "generated/coverage.md": coverage_markdown,
    "generated/deviations.md": deviations_markdown,
    "generated/known-bugs.md": known_bugs_markdown,
    "generated/benchmarks.md": benchmarks_markdown,
}


def stale_pages() -> list[str]:
    """The generated pages whose committed text differs from what the code renders now."""
    return [name for name, render in PAGES.items()
            if not (DOCS / name).is_file() or (DOCS / name).read_text(encoding="utf-8") != render()]


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        stale = stale_pages()
        for name in stale:
            print(f"docs/{name} is stale: run {REGENERATE}", file=sys.stderr)
        return 1 if stale else 0
    if argv:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    for name, render in PAGES.items():
        path = DOCS / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(), encoding="utf-8")
        print(f"wrote docs/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
