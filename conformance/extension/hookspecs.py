"""The hooks of kafka-conformance: the one file a plugin author reads (rendered to docs/reference/hooks.md).

Rules:

- Every hook is named ``conformance_<verb>_<noun>`` and is called with keyword arguments only.
- Registration hooks (``conformance_register_*``, in the style of tox's ``tox_register_*``) are called
  each time the harness needs what they register, with a fresh registry; an implementation calls the
  registry's ``add`` and returns nothing. pluggy calls the newest plugin first, and the first ``add`` of
  a name keeps it, so a plugin registered after the built-in one (every installed plugin) overrides a
  built-in step kind, matcher, emulation or output of the same name, and its target kinds are tried first.
- Contribution hooks (``conformance_spec_dirs``, ``conformance_suite_dirs``) return folders; they are
  read in registration order (the built-in plugin's first).
- Notification hooks (``conformance_result_recorded``, ``conformance_session_finished``) may fail: the
  failure is a warning, never a changed verdict.
- The harness's own targets, step kinds, outputs and suites come through these same hooks, from
  :mod:`conformance.extension.builtin`. Nothing here imports the harness at run time (the types are
  for readers and type checkers), so a plugin that imports ``hookimpl`` pulls in nothing else.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from ..suite.model import CaseResult
    from .registries import EmulationRegistry, MatcherRegistry, OutputRegistry, StepKindRegistry, TargetRegistry

PROJECT = "conformance"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# ------------------------------------------------------------------------------ registration
@hookspec
def conformance_register_targets(registry: TargetRegistry) -> None:
    """Register target kinds: ``registry.add(MyTarget)``, a :class:`conformance.targets.base.Target` subclass that
    declares its kind (``kind``, ``description``, ``matches(spec)``, ``availability()``), or
    ``registry.add(TargetKind(...))``.

    A :class:`conformance.targets.registry.TargetKind` matches target spec strings (``kafka:4.4.0``,
    ``tansu``, ``HOST:PORT``) and builds a :class:`conformance.targets.base.Target` for them. The harness
    puts ``proxy+SPEC`` and ``emulate:DRAFT+SPEC`` around every registered kind, a plugin's included.

    :param registry: collects the kinds; ``registry.kinds`` lists those added so far.
    """


@hookspec
def conformance_register_step_kinds(registry: StepKindRegistry) -> None:
    """Register suite step kinds: ``registry.add(StepKind(keyword, run, ...))``.

    A :class:`conformance.suite.kinds.StepKind` says how a step whose key is its keyword runs, checks
    and nests; ``registry.add_function(keyword, function)`` registers a plain ``function(step, context)``
    that gets the step with its expressions resolved.

    :param registry: collects the step kinds by keyword.
    """


@hookspec
def conformance_register_matchers(registry: MatcherRegistry) -> None:
    """Register field matchers for suites' expectations: ``registry.add(name, matcher)``.

    ``matcher(actual, argument)`` returns ``None`` when the value matches and a short explanation when
    it does not.

    :param registry: collects the matchers by name.
    """


@hookspec
def conformance_register_emulations(registry: EmulationRegistry) -> None:
    """Register draft KIPs emulated on a real broker: ``registry.add(name, factory)``.

    ``--target emulate:NAME+SPEC`` starts SPEC with the proxy in front of it and installs
    ``factory(target)`` as the proxy's interceptor (``target`` is the
    :class:`conformance.targets.emulated.EmulatedTarget`, started inner target included); see
    :mod:`conformance.proxy.interceptor` and the base class :class:`conformance.proxy.emulation.Emulation`.
    The interceptor answers the draft's new versions and APIs, translating them to what the broker
    implements, and advertises them in ApiVersions; an object with a ``close()`` method has it called when
    the target stops.

    :param registry: collects the emulation factories by draft name.
    """


@hookspec
def conformance_register_outputs(registry: OutputRegistry) -> None:
    """Register outputs, where a run's results go: ``registry.add(MyOutput)``, a
    :class:`conformance.report.sinks.Output` subclass with a ``name``, its ``options``
    (:class:`conformance.report.sinks.OutputOption`, e.g. ``--sarif FILE``) and ``open(context)``.

    The options of an installed plugin's outputs are added to ``conformance run``, ``semantic`` and ``explore``
    and to pytest (a conftest.py, which joins a run once pytest has read its options, adds its own in
    ``pytest_addoption``), and reach ``open`` as ``context.options`` (a :class:`conformance.report.sinks.SinkContext`), whichever entry point runs;
    ``open`` returns a :class:`conformance.report.sinks.Sink`, or ``None`` when the options do not ask for the
    output (no ``--junit``). The sink's ``record(result, line)`` is called with every final result and its
    results-file line, in registration order; ``finish(end)`` once the run ends (on the controller only, under
    pytest-xdist), where ``end.records()`` reads the run's results back. A format written at the end subclasses
    :class:`conformance.report.sinks.FileOutput` and writes ``write(records, path)``; what a result is to CI is
    :func:`conformance.report.ci.ci_result`. ``registry.add_sink(name, factory)`` registers a sink without
    options. A sink that raises fails the run, as the results file would.

    :param registry: collects the outputs by name; the built-in ones are ``jsonl``, ``allure``, ``junit`` and
        ``sarif``.
    """


# ------------------------------------------------------------------------------ contributions
@hookspec
def conformance_spec_dirs() -> list[Path]:  # type: ignore[empty-body]  # a specification: pluggy runs the plugins' bodies
    """Return directories of Kafka JSON message specs to overlay on the bundled ones.

    A draft KIP's plugin returns the folder with its new or changed ``*Request.json`` /
    ``*Response.json`` files; later directories replace earlier definitions of the same API.
    """


@hookspec
def conformance_suite_dirs() -> list[Path]:  # type: ignore[empty-body]  # a specification: pluggy runs the plugins' bodies
    """Return folders of suites a run uses when it names none (no ``--suite`` and no suite paths).

    A plugin returns a folder of its package, e.g. ``[importlib.resources.files(__package__) / "suites"]``.
    The built-in plugin returns the bundled suites; a ``suites/`` folder in pytest's rootdir takes their
    place (a checkout's own copy, or a vendor's own suites).
    """


# ------------------------------------------------------------------------------ notifications
@hookspec
def conformance_result_recorded(result: CaseResult) -> None:
    """Called with every :class:`conformance.suite.model.CaseResult` as soon as it is final: the suites' items,
    the exactly-once tier's checks (``conformance semantic``) and exploration's departures alike.

    :param result: the item's result, after the outputs' sinks have recorded it.
    """


@hookspec
def conformance_session_finished(results_path: str) -> None:
    """Called once when a run ends (on the controller only, under pytest-xdist).

    :param results_path: the path of the run's JSONL results file.
    """
