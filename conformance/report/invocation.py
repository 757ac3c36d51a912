"""How the harness finds its suites and loads its pytest plugin when it runs pytest for a command."""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path


def default_suites_path() -> Path:
    """``suites/`` of the current folder when there is one, else the one beside this package (a checkout)."""
    here = Path.cwd() / "suites"
    return here if here.is_dir() else Path(__file__).resolve().parents[2] / "suites"


def plugin_arguments() -> list[str]:
    """Load the plugin by module only when its entry point is missing, or pytest would register it twice."""
    installed = any(entry.value == "conformance.plugin" for entry in entry_points(group="pytest11"))
    return [] if installed else ["-p", "conformance.plugin"]
