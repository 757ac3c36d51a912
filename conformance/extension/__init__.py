"""The extension seam: how plugins, the harness's own features included, reach a run.

A plugin is a module (or object) with ``conformance_*`` hook implementations, installed under the
``conformance`` entry-point group in its package's ``pyproject.toml``::

    [project.entry-points.conformance]
    my-broker = "my_broker.plugin"

The module implements the hooks it needs, here a target kind and the suites the package ships::

    from importlib.resources import files

    from conformance.extension import hookimpl

    # a conformance.targets.base.Target: start(), stop(), bootstrap, and its kind declared on the class
    # (kind = "my-broker", description = "My broker"; matches() and availability() where the defaults do not do)
    from .target import MyTarget

    @hookimpl
    def conformance_register_targets(registry):
        registry.add(MyTarget)

    @hookimpl
    def conformance_suite_dirs():
        return [files(__package__) / "suites"]  # package data: the folder ships inside the package

``--target proxy+my-broker`` and ``--target emulate:DRAFT+my-broker`` then work too. A conftest.py or
any pytest plugin with such hooks joins a pytest run's plugins as well.

The package's rooms: :mod:`.hookspecs` (the hooks, documented in docs/reference/hooks.md),
:mod:`.registries` (what the registration hooks fill), :mod:`.manager` (one plugin manager per run),
:mod:`.facade` (:class:`Extensions`, the typed calls), :mod:`.compose` (``proxy+`` and ``emulate:``
around every kind), :mod:`.builtin` (the harness's own plugin) and :mod:`.reference` (the hooks page).
"""

from __future__ import annotations

from .facade import Extensions
from .hookspecs import hookimpl
from .manager import make_plugin_manager

__all__ = ["Extensions", "hookimpl", "make_plugin_manager"]
