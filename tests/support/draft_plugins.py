"""The bundled draft-KIP plugins (plugins/), as their tests load them: folders, and a run's plugins with
one or more of them registered as their entry points would register them."""

from __future__ import annotations

import importlib
import sys
from contextlib import contextmanager
from pathlib import Path

from conformance.extension import Extensions

PLUGINS = Path(__file__).resolve().parents[2] / "plugins"
KIP1309 = PLUGINS / "kip1309_txn_heartbeat"
KIP447 = PLUGINS / "kip447_draft_group_eos"
KIP609 = PLUGINS / "kip609_preregistration"


@contextmanager
def registered(*folders: Path):
    """A run's plugins with each folder's plugin module registered, as its entry point would register it."""
    modules = []
    for folder in folders:
        sys.path.insert(0, str(folder))
        modules.append(importlib.import_module(f"{folder.name}.plugin"))
    try:
        yield Extensions.for_run(plugins=modules)
    finally:
        for folder in folders:
            sys.path.remove(str(folder))
