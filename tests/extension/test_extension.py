"""The extension seam: the built-in features come through the public hooks, and a third party's plugin can add
a target kind, a step kind, a sink and suites, with ``proxy+`` and ``emulate:`` around its kind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance import resources
from conformance.extension import Extensions, hookimpl, make_plugin_manager
from conformance.extension.manager import BUILTIN
from conformance.report.sinks import JsonlSink, SinkContext
from conformance.suite.kinds import StepKind
from conformance.suite.loader import load_suites
from conformance.targets.base import Target
from conformance.targets.emulated import EmulatedTarget
from conformance.targets.proxied import ProxiedTarget
from conformance.targets.registry import TargetKind, resolve
from conformance.runner.steps import BUILTIN_STEP_KINDS, bundled

from fake_kafka import FakeKafka

pytest_plugins = ["pytester"]

BUILTIN_KINDS = {"kafka", "kafka-cluster", "tansu", "rdkafka-mock", "command", "container", "host:port"}
BUILTIN_STEPS = set(BUILTIN_STEP_KINDS)  # one module each in conformance/runner/steps, listed there

TOY_SUITE = """\
suite: toy.notes
title: A suite a plugin ships in its package
spec: toy-spec
cases:
  - id: toy-note
    title: A case made of the plugin's own step kind
    requirement: MUST
    cites: "toy-spec: a note is taken"
    steps:
      - note: first
      - note: second
"""


class ToyTarget(Target):
    """A broker that answers ApiVersions and Metadata (the harness asks whether a target is up)."""

    kind = "toy"

    def start(self) -> None:
        self.broker = FakeKafka()

    @property
    def bootstrap(self) -> str:
        return self.broker.address

    def stop(self) -> None:
        self.broker.stop()


class ToyPlugin:
    """Everything a third party may add; written as a plugin author would write it from hookspecs.py."""

    notes: list[str] = []
    recorded: list[tuple[str, str]] = []
    finished: list[str] = []

    def __init__(self, suites: Path):
        self.suites = suites

    @hookimpl
    def conformance_register_targets(self, registry):
        registry.add(TargetKind("toy", "a toy broker", lambda spec: spec == "toy", ToyTarget, lambda: None))

    @hookimpl
    def conformance_register_step_kinds(self, registry):
        registry.add(StepKind("note", take_note))

    @hookimpl
    def conformance_register_outputs(self, registry):
        registry.add_sink("memory", lambda context: MemorySink())

    @hookimpl
    def conformance_register_emulations(self, registry):
        registry.add("toydraft", lambda target: object())

    @hookimpl
    def conformance_suite_dirs(self):
        return [self.suites]


def take_note(context, step, index, label) -> None:
    ToyPlugin.notes.append(step["note"])
    context.checked(None, None, {"note": step["note"]})  # an expectation held: a case never passes on nothing


class MemorySink:
    def record(self, result, line):
        ToyPlugin.recorded.append((result.case_id, line["outcome"]))

    def finish(self, end):
        ToyPlugin.finished.append(str(end.results_path))


@pytest.fixture
def toy(tmp_path) -> ToyPlugin:
    folder = tmp_path / "toy_suites"
    folder.mkdir()
    (folder / "notes.yaml").write_text(TOY_SUITE)
    ToyPlugin.notes, ToyPlugin.recorded, ToyPlugin.finished = [], [], []
    return ToyPlugin(folder)


def sink_context(tmp_path) -> SinkContext:
    # no --alluredir, --junit nor --sarif: those outputs stay out of the run
    return SinkContext(results_path=tmp_path / "results.jsonl", run_id="r", options={"allure_report_dir": None})


# ------------------------------------------------------------------------------ the built-in plugin
def test_the_built_in_targets_step_kinds_sinks_and_suites_come_through_the_hooks(tmp_path):
    extensions = Extensions.for_run(load_entry_points=False)
    assert {kind.name for kind in extensions.registered_target_kinds()} == BUILTIN_KINDS
    assert set(extensions.step_kinds()) == BUILTIN_STEPS
    assert list(extensions.outputs()) == ["jsonl", "allure", "junit", "sarif"]
    assert [type(sink) for sink in extensions.sinks(sink_context(tmp_path))] == [JsonlSink]
    assert extensions.suite_dirs() == [resources.suites()]

    extensions.manager.unregister(name=BUILTIN)  # what is left is what the harness itself adds: nothing
    assert extensions.registered_target_kinds() == [] and extensions.step_kinds() == {}
    assert extensions.outputs() == {} and extensions.suite_dirs() == []
    assert {kind.name for kind in extensions.target_kinds()} == {"emulate", "proxy", "perturb"}  # the wrappers, around nothing


def test_the_built_in_plugin_is_blocked_by_name(monkeypatch):
    monkeypatch.setenv("CONFORMANCE_DISABLE_PLUGINS", "builtin")
    assert Extensions.for_run(load_entry_points=False).registered_target_kinds() == []


def test_a_misspelled_hook_is_refused_when_the_plugin_joins():
    class Misspelled:
        @hookimpl
        def conformance_register_target(self, registry):
            pass

    with pytest.raises(Exception, match="unknown hook"):
        make_plugin_manager(load_entry_points=False, plugins=[Misspelled()])


# ------------------------------------------------------------------------------ a third party's plugin
def test_a_plugin_adds_a_target_kind_that_proxy_and_emulate_compose_around(toy):
    kinds = Extensions.for_run(load_entry_points=False, plugins=[toy]).target_kinds()
    assert isinstance(resolve("toy", kinds), ToyTarget)
    proxied = resolve("proxy+toy", kinds)
    assert isinstance(proxied, ProxiedTarget) and isinstance(proxied.inner, ToyTarget)
    emulated = resolve("emulate:toydraft+toy", kinds)
    assert isinstance(emulated, EmulatedTarget) and isinstance(emulated.inner, ToyTarget)
    twice = resolve("proxy+emulate:toydraft+toy", kinds)  # the wrappers compose around each other too
    assert isinstance(twice.inner, EmulatedTarget) and isinstance(twice.inner.inner, ToyTarget)


def test_a_plugin_adds_a_step_kind_a_sink_and_a_suite_folder(toy, tmp_path):
    extensions = Extensions.for_run(load_entry_points=False, plugins=[toy])
    assert extensions.suite_dirs() == [resources.suites(), toy.suites]  # the built-in plugin's first
    suites, errors = load_suites(extensions.suite_dirs()[1:], components=extensions.components())
    assert errors == [] and [case.id for case in suites[0].cases] == ["toy-note"]
    _, errors = load_suites([toy.suites], components=bundled())  # without the plugin, its step kind is unknown
    assert errors
    sinks = extensions.sinks(sink_context(tmp_path))
    assert [type(sink) for sink in sinks] == [JsonlSink, MemorySink]  # the built-in sinks are asked first


def test_the_commands_read_the_plugins_suites_and_suites_here_replace_the_bundled_ones(toy, tmp_path, monkeypatch):
    from conformance.report.invocation import suite_paths

    contributed = Extensions.for_run(load_entry_points=False, plugins=[toy]).suite_dirs()
    monkeypatch.chdir(tmp_path)
    assert suite_paths([], contributed) == [resources.suites(), toy.suites]
    (tmp_path / "suites").mkdir()
    assert suite_paths([], contributed) == [tmp_path / "suites", toy.suites]
    assert suite_paths(["mine.yaml"], contributed) == [Path("mine.yaml")]  # named suites only


def test_a_plugin_with_its_own_suites_runs_under_pytest(toy, pytester):
    """A run that names no suites takes those the plugins contribute; the rootdir's (empty) ``suites/`` stands in
    for the bundled ones, so only the plugin's case is collected."""
    (pytester.path / "suites").mkdir()
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "--target", "toy",
                                "--results", "r.jsonl", plugins=[toy])
    result.assert_outcomes(passed=1)
    assert ToyPlugin.notes == ["first", "second"]
    assert ToyPlugin.recorded == [("toy-note", "passed")] and ToyPlugin.finished == [str(pytester.path / "r.jsonl")]
    [line] = [json.loads(text) for text in (pytester.path / "r.jsonl").read_text().splitlines()]
    assert line["case"] == "toy-note" and line["outcome"] == "passed"  # the built-in JSONL sink wrote it


# ------------------------------------------------------------------------------ the reference page
def test_the_hooks_reference_page_is_fresh():
    from conformance.extension import reference

    page = Path(__file__).resolve().parents[2] / "docs" / "reference" / "hooks.md"
    assert page.read_text(encoding="utf-8") == reference.render(), \
        "regenerate it: python -m conformance.extension.reference docs/reference/hooks.md"


def test_every_hook_is_typed_documented_and_on_the_page():
    import inspect

    from conformance.extension import hookspecs

    page = (Path(__file__).resolve().parents[2] / "docs" / "reference" / "hooks.md").read_text(encoding="utf-8")
    hooks = [function for name, function in vars(hookspecs).items() if name.startswith("conformance_")]
    assert len(hooks) == len(make_plugin_manager(builtin=False, load_entry_points=False).hook.__dict__)
    for hook in hooks:
        signature = inspect.signature(hook)
        assert signature.return_annotation is not inspect.Signature.empty, hook.__name__
        assert all(parameter.annotation is not inspect.Parameter.empty for parameter in signature.parameters.values())
        assert hook.__doc__ and f"### `{hook.__name__}`" in page
