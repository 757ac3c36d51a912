"""The import layering (protocol < client < targets < suite < capture < report | analysis | semantic | runner <
plugin, CLI and the composition root) is a contract in pyproject.toml; this keeps it checked wherever the tests run."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_import_layers_hold():
    if shutil.which("lint-imports") is None:
        pytest.fail("import-linter is part of the dev extra: pip install -e '.[dev]'")
    checked = subprocess.run(["lint-imports", "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-2000:]
    contracts = (ROOT / "pyproject.toml").read_text().count("[[tool.importlinter.contracts]]")
    assert f"Contracts: {contracts} kept, 0 broken." in checked.stdout
