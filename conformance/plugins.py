"""The harness's plugin manager: bundled features and third-party packages through one door."""

from __future__ import annotations

import functools
import logging
import os
import warnings

import pluggy

from . import hookspecs

ENTRY_POINT_GROUP = "conformance"
log = logging.getLogger(__name__)


@functools.lru_cache(maxsize=1)
def plugin_manager() -> pluggy.PluginManager:
    """Loads the ``conformance`` entry points once per process.

    A plugin that fails to import is reported and skipped, so one broken third-party package
    does not stop a certification run. ``CONFORMANCE_DISABLE_PLUGINS`` (comma-separated entry
    point names) blocks plugins by name.
    """
    manager = pluggy.PluginManager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    for name in filter(None, os.environ.get("CONFORMANCE_DISABLE_PLUGINS", "").split(",")):
        manager.set_blocked(name.strip())
    from importlib.metadata import entry_points

    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        if manager.is_blocked(entry_point.name) or manager.get_plugin(entry_point.name):
            continue
        try:
            manager.register(entry_point.load(), name=entry_point.name)
        except Exception as error:  # noqa: BLE001 - any import failure of a plugin is reported, not fatal
            warnings.warn(f"conformance plugin {entry_point.name!r} failed to load: {error}", stacklevel=2)
    from .suite import bundled as bundled_steps
    from . import emulations as bundled_emulations
    from .targets import bundled as bundled_targets

    for name, module in (("bundled-targets", bundled_targets), ("bundled-steps", bundled_steps),
                         ("bundled-emulations", bundled_emulations)):
        # Running from a source tree that was never pip-installed: entry points are missing.
        if manager.get_plugin(name) is None and not manager.is_blocked(name):
            manager.register(module, name=name)
    manager.check_pending()
    return manager


def target_kinds() -> list:
    kinds = []
    for provided in plugin_manager().hook.conformance_target_kinds():
        kinds.extend(provided or [])
    return kinds


def spec_overlay_dirs() -> list[str]:
    dirs: list[str] = []
    for provided in reversed(plugin_manager().hook.conformance_spec_dirs()):  # registration order
        dirs.extend(str(path) for path in provided or [])
    return dirs


def merged_mapping(hook_name: str) -> dict:
    merged: dict = {}
    for provided in reversed(getattr(plugin_manager().hook, hook_name)()):
        merged.update(provided or {})
    return merged


def codec_with_plugins():
    """A codec over the bundled specs plus every overlay directory plugins provide (draft KIPs).

    Made anew on each call: plugins may have been registered since the last one.
    """
    from .protocol.codec import Codec
    from .protocol.schema import bundled_registry

    return Codec(bundled_registry(spec_overlay_dirs()))
