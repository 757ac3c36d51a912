"""How the harness finds its suites and loads its pytest plugin when it runs pytest for a command."""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

from .. import resources

SUITE_PATHS_HELP = "suite files or folders (default: suites/ here, else the bundled suites)"


def default_suites_path() -> Path:
    """``suites/`` of the current folder when there is one, else the bundled suites."""
    here = Path.cwd() / "suites"
    return here if here.is_dir() else resources.suites()


def default_suites(base: Path, contributed: list[Path]) -> list[Path]:
    """The suites a run reads when it names none: those the plugins contribute (``conformance_suite_dirs``,
    the bundled ones first), with ``suites/`` of ``base`` (the current folder, pytest's rootdir) in place
    of the bundled ones when it is there: a checkout's own copy, or a vendor's own suites."""
    bundled, here = resources.suites().resolve(), base / "suites"
    chosen = [here if Path(path).resolve() == bundled and here.is_dir() else Path(path) for path in contributed]
    return list(dict.fromkeys(chosen)) or ([here] if here.is_dir() else [])


def suite_paths(paths, contributed: list[Path] | None = None) -> list[Path]:
    """The suite files and folders a command reads: those given, else :func:`default_suites` of the
    current folder over ``contributed`` (the plugins' suite folders; the bundled suites when not given).

    A relative path that is not there but names a bundled suite file or folder (``suites/cluster``,
    ``kip98/transactions.yaml``) means the bundled one, so the same commands work without a checkout."""
    if paths:
        return [_given_or_bundled(Path(path)) for path in paths]
    return default_suites(Path.cwd(), [resources.suites()] if contributed is None else contributed)


def _given_or_bundled(path: Path) -> Path:
    if path.exists() or path.is_absolute():
        return path
    bundled = resources.suites() / (Path(*path.parts[1:]) if path.parts[:1] == ("suites",) else path)
    return bundled if bundled.exists() else path


# Plugins a run of suites never uses that cost it time where they are installed: Hypothesis's imports all of
# Hypothesis for pytest's terminal summary, 1 CPU-s of each gate rerun's pytest (measured; `conformance run` draws
# its own summary and is spared). A test environment usually has Hypothesis.
UNUSED_PLUGINS = ("hypothesispytest",)


def plugin_arguments() -> list[str]:
    """The ``-p`` options of a pytest the harness runs: its plugin by module only when the entry point is missing (or
    pytest would register it twice), and :data:`UNUSED_PLUGINS` off."""
    installed = any(entry.value == "conformance.pytest_plugin.plugin" for entry in entry_points(group="pytest11"))
    unused = [argument for name in UNUSED_PLUGINS for argument in ("-p", f"no:{name}")]
    return unused if installed else [*unused, "-p", "conformance.pytest_plugin.plugin"]
