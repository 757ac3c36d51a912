"""The plugin manager of one run: made by :func:`make_plugin_manager`, never kept in a global.

Rules: the built-in plugin is registered first (``builtin``), then every ``conformance`` entry point;
a plugin that fails to import is a warning and is skipped, so one broken third-party package does not
stop a certification run. ``CONFORMANCE_DISABLE_PLUGINS`` (comma-separated names: entry point names,
or ``builtin``) blocks plugins. ``check_pending()`` turns a misspelled hook into an error at once. The
pytest plugin keeps its run's manager in ``config.stash``; commands and benchmarks make one per run.
"""

from __future__ import annotations

import os
import warnings
from importlib.metadata import entry_points
from typing import Iterable

import pluggy

from . import hookspecs

ENTRY_POINT_GROUP = "conformance"
BUILTIN = "builtin"
DISABLE_VARIABLE = "CONFORMANCE_DISABLE_PLUGINS"
# Entry point names of the built-in features before they became one plugin: an install made before
# then still lists them, and they are the built-in plugin's, so they are not loaded again.
FORMER_BUILTIN_ENTRY_POINTS = frozenset({"bundled-targets", "bundled-steps"})


def make_plugin_manager(*, builtin: bool = True, load_entry_points: bool = True,
                        plugins: Iterable[object] = ()) -> pluggy.PluginManager:
    """A manager with the hooks, the built-in plugin, the installed plugins and ``plugins`` (tests, conftests)."""
    manager = pluggy.PluginManager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    for name in filter(None, (name.strip() for name in os.environ.get(DISABLE_VARIABLE, "").split(","))):
        manager.set_blocked(name)
    if builtin and not manager.is_blocked(BUILTIN):
        from . import builtin as builtin_plugin

        manager.register(builtin_plugin, name=BUILTIN)
    if load_entry_points:
        _load_entry_points(manager)
    for plugin in plugins:
        if not manager.is_registered(plugin):
            manager.register(plugin)
    manager.check_pending()
    return manager


def _load_entry_points(manager: pluggy.PluginManager) -> None:
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        if (entry_point.name in FORMER_BUILTIN_ENTRY_POINTS or manager.is_blocked(entry_point.name)
                or manager.get_plugin(entry_point.name) is not None):
            continue
        try:
            plugin = entry_point.load()
            if not manager.is_registered(plugin):  # two names for one module
                manager.register(plugin, name=entry_point.name)
        except Exception as error:  # noqa: BLE001 - any failure of a plugin to load is reported, not fatal
            warnings.warn(f"conformance plugin {entry_point.name!r} failed to load: {error}", stacklevel=3)


def has_hook_implementations(plugin: object) -> bool:
    """Whether ``plugin`` (a pytest plugin: a conftest, a ``-p`` module) implements any ``conformance_*`` hook."""
    marker = f"{hookspecs.PROJECT}_impl"  # the attribute pluggy's HookimplMarker sets
    for name in dir(plugin):
        if name.startswith("conformance_"):
            try:
                if hasattr(getattr(plugin, name), marker):
                    return True
            except Exception:  # noqa: BLE001 - an odd attribute of someone else's plugin is not ours
                continue
    return False
