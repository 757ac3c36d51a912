"""ruff and mypy, run by the tests, so that `python -m pytest` (what CI runs) fails when either would.

ruff checks conformance/, tests/, tools/ and plugins/ with the rules in pyproject.toml. mypy checks the package
with ``[tool.mypy]`` of pyproject.toml: the protocol, the results record and the plugin seam are strict and
clean. The other packages were never checked before this test; the errors they had then are listed in
``mypy-known-errors.txt`` beside it (path, message and code, without line numbers, so editing a file does not
move them). An error not in the list fails; never add one to it. A line no error matches any more fails too, so
the list only shrinks and says the truth: delete the lines of the errors you fix (regenerating the list,
``python tests/project/test_static_checks.py > tests/project/mypy-known-errors.txt``, does it).
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KNOWN = Path(__file__).with_name("mypy-known-errors.txt")
STRICT = ("conformance/protocol/", "conformance/results/", "conformance/extension/")
_ERROR = re.compile(r"^(?P<path>[^:\s]+\.py):\d+: error: (?P<message>.*)$")


def _tool(module: str) -> None:
    found = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True)
    if found.returncode != 0:
        pytest.fail(f"{module} is part of the dev extra: pip install -e '.[dev]'")


def mypy_errors(cache_dir: Path | None = None) -> Counter:
    """``path: message  [code]`` of every error mypy reports on the package, counted."""
    command = [sys.executable, "-m", "mypy", "--no-error-summary", "--show-error-codes", "--no-pretty"]
    if cache_dir is not None:
        command += ["--cache-dir", str(cache_dir)]
    checked = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
    if checked.returncode not in (0, 1) or checked.stderr.strip():
        raise AssertionError(f"mypy did not run: {checked.stderr[-2000:]}")
    return Counter(f"{match['path']}: {match['message'].strip()}" for line in checked.stdout.splitlines()
                   if (match := _ERROR.match(line)))


def test_ruff_finds_nothing():
    _tool("ruff")
    checked = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "conformance", "tests", "tools",
                              "plugins"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0, checked.stdout[-4000:] + checked.stderr[-2000:]


def test_mypy_finds_no_error_beyond_the_known_ones_and_none_in_the_strict_packages(tmp_path_factory):
    _tool("mypy")
    known = Counter(line for line in KNOWN.read_text(encoding="utf-8").splitlines() if line.strip())
    assert not [line for line in known if line.startswith(STRICT)], "the strict packages have no known errors"
    found = mypy_errors(tmp_path_factory.mktemp("mypy-cache"))
    new = sorted((found - known).elements())
    assert new == [], "mypy errors not in mypy-known-errors.txt (fix them; never add them to the list):\n" + "\n".join(new)
    stale = sorted((known - found).elements())
    assert stale == [], "lines of mypy-known-errors.txt no error matches (fixed: delete them):\n" + "\n".join(stale)


if __name__ == "__main__":
    print("\n".join(sorted(mypy_errors().elements())))
