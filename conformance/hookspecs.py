"""The extension points of kafka-conformance: the one file a plugin author reads.

Plugins are discovered through the ``conformance`` entry-point group (see ``plugins.py``);
the harness's own targets, specs and sinks register through these same hooks.
"""

from __future__ import annotations

import pluggy

PROJECT = "conformance"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def conformance_target_kinds():
    """Return a list of :class:`conformance.targets.registry.TargetKind` this plugin provides.

    A kind matches target spec strings (``kafka:4.4.0``, ``tansu``, ``host:9092`` ...) and
    builds a :class:`conformance.targets.base.Target` for them.
    """


@hookspec
def conformance_spec_dirs():
    """Return a list of directories holding Kafka JSON message specs to overlay on the bundled ones.

    A draft KIP's plugin returns the folder with its new or changed ``*Request.json`` /
    ``*Response.json`` files; later directories replace earlier definitions of the same API.
    """


@hookspec
def conformance_emulations():
    """Return a mapping ``{name: factory(target) -> Interceptor}`` of draft KIPs emulated on a real broker.

    ``--target emulate:NAME+SPEC`` starts SPEC with the proxy in front of it and installs
    ``factory(target)`` (``target`` is the :class:`conformance.targets.emulated.EmulatedTarget`, started
    inner target included) as the proxy's interceptor; see :mod:`conformance.proxy.interceptor` and the
    base class :class:`conformance.proxy.emulation.Emulation`. The interceptor answers the draft's new
    versions and APIs, translating them to what the broker implements, and advertises them in ApiVersions;
    an object with a ``close()`` method has it called when the target stops.
    """


@hookspec
def conformance_step_kinds():
    """Return a mapping ``{step keyword: callable(step, context)}`` of extra suite step kinds."""


@hookspec
def conformance_matchers():
    """Return a mapping ``{matcher name: callable(actual, argument) -> str | None}``.

    A matcher returns ``None`` when the value matches and a short explanation when it does not.
    """


@hookspec
def conformance_result_recorded(result):
    """Called with every :class:`conformance.report.results.CaseResult` as soon as it is final."""


@hookspec
def conformance_session_finished(results_path):
    """Called once when a run ends, with the path of its JSONL results file."""
