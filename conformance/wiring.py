"""The composition root: the one place that turns the installed plugins into what the layers below use.

The codec (bundled specs plus draft overlays), the step kinds (the built-in ones come through the
same hook as a plugin's), the matchers, the target kinds and the reporters' hooks are read from the
plugin manager here and handed down; nothing below this module imports the plugin manager.
"""

from __future__ import annotations

import warnings

from .plugins import codec_with_plugins, merged_mapping, plugin_manager, target_kinds
from .suite.components import Components
from .suite.kinds import as_step_kind

__all__ = ["components", "notify", "target_kinds"]


def components() -> Components:
    """Made anew on each call: plugins may have been registered since the last one."""
    kinds = {keyword: as_step_kind(keyword, provided)
             for keyword, provided in merged_mapping("conformance_step_kinds").items()}
    return Components(codec_with_plugins(), kinds, merged_mapping("conformance_matchers"))


def notify(hook_name: str, **arguments) -> None:
    """Tell the reporters; a failing third-party reporter is a warning, never a changed verdict."""
    try:
        getattr(plugin_manager().hook, hook_name)(**arguments)
    except Exception as error:  # noqa: BLE001
        warnings.warn(f"a conformance plugin failed in {hook_name}: {error}", stacklevel=2)
