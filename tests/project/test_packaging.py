"""The wheel is the whole tool: installed without the checkout, it lists, lints and runs the bundled suites from
any folder and writes its reports there; and the package finds its data through one module only."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest
from report_records import record, write_jsonl

from conformance import resources
from conformance.protocol import compression
from conformance.report.invocation import suite_paths
from conformance.targets.kafka.jars import DEFAULT_KAFKA_VERSION

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "conformance"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
# Module-relative data lookups that break once the package is installed somewhere else.
DATA_LOOKUP = re.compile(r"parents\[|Path\(__file__\)")


# ------------------------------------------------------------------------------ fast
def test_only_resources_knows_where_data_is():
    offenders = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
                 for path in sorted(PACKAGE.rglob("*.py")) if path.name != "resources.py" or path.parent != PACKAGE
                 for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
                 if DATA_LOOKUP.search(line)]
    assert not offenders, "find data through conformance.resources:\n" + "\n".join(offenders)


def test_resources_find_the_data_of_a_source_tree():
    assert resources.source_tree() == ROOT  # an editable install or a checkout on sys.path
    assert resources.suites() == ROOT / "suites" and resources.templates().is_dir()
    assert resources.broker_profile().is_file()
    for path in (resources.message_specs(), resources.error_catalogue(), resources.suite_schema(),
                 resources.certification_levels(), resources.capabilities_schema(),
                 resources.page_templates() / "base.html.j2"):
        assert path.exists(), path


def test_a_path_that_is_not_here_may_name_a_bundled_suite(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert suite_paths([]) == [resources.suites()]  # no suites/ here
    assert suite_paths(["suites/cluster", "kip98/transactions.yaml"]) == [
        resources.suites() / "cluster", resources.suites() / "kip98" / "transactions.yaml"]
    (tmp_path / "kip98").mkdir()
    assert suite_paths(["kip98", "mine.yaml"]) == [Path("kip98"), Path("mine.yaml")]  # what is here wins
    (tmp_path / "suites").mkdir()
    assert suite_paths(None) == [tmp_path / "suites"]


def test_the_wheel_maps_the_folders_resources_reads():
    mapping = PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]["hooks"]["custom"]["package-data"]
    assert mapping == {"suites": f"conformance/{resources.DATA}/suites",
                       "fixtures/kafka": f"conformance/{resources.DATA}/{resources.KAFKA_PROFILES}"}
    sdist = PYPROJECT["tool"]["hatch"]["build"]["targets"]["sdist"]["include"]
    assert set(mapping) <= set(sdist)  # a wheel built from the sdist carries them too


def test_every_codec_is_a_base_dependency():
    base = {re.split(r"[<>=!~\[; ]", requirement)[0].lower() for requirement in PYPROJECT["project"]["dependencies"]}
    assert {package for _, package in compression._PACKAGES.values()} <= base


def test_the_tests_collect_without_the_analysis_extra():
    """A contributor who installs `.[dev]` alone meets Spark's skips, never a collection error (pyspark blocked)."""
    blocked = ("import sys; sys.modules['pyspark'] = None; import pytest; "
               "sys.exit(pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider']))")
    collected = subprocess.run([sys.executable, "-c", blocked], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-2000:]
    assert "could not import 'pyspark'" in collected.stdout  # the block held: Spark's modules were skipped


def test_one_upstream_kafka_release():
    assert DEFAULT_KAFKA_VERSION == resources.UPSTREAM_KAFKA
    sources = {json.loads(path.read_text(encoding="utf-8"))["x-source"]
               for path in resources.message_specs().glob("*.json")}
    assert sources and all(resources.UPSTREAM_KAFKA in source for source in sources), sources


# ------------------------------------------------------------------------------ the wheel, installed
@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The wheel ``python -m build`` makes, installed in a fresh venv whose dependencies come from this
    environment (a .pth naming its site-packages: never its .pth files, so the checkout stays out of sys.path)."""
    pytest.importorskip("build", reason="pip install build (part of the dev extra)")
    folder = tmp_path_factory.mktemp("packaging")
    isolation = ["--no-isolation"] if _importable("hatchling") else []  # offline when the backend is here
    built = subprocess.run([sys.executable, "-m", "build", *isolation, "--outdir", str(folder / "dist"), str(ROOT)],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    wheel = next((folder / "dist").glob("kafka_conformance-*.whl"))
    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True, timeout=300,
                   env=_without_python_variables())
    venv_site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                    capture_output=True, text=True, check=True).stdout.strip())
    (venv_site / "_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    empty = folder / "elsewhere"
    empty.mkdir()
    return wheel, venv, empty


def _importable(name: str) -> bool:
    from importlib.util import find_spec

    return find_spec(name) is not None


def _without_python_variables() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if name not in ("PYTHONPATH", "PYTHONHOME")}


def _in(venv: Path, folder: Path, *command: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([str(venv / "bin" / command[0]), *command[1:]], cwd=folder, capture_output=True,
                          text=True, timeout=timeout, env=_without_python_variables())


@pytest.mark.broker
def test_the_wheel_carries_the_data(installed):
    wheel, _, _ = installed
    names = zipfile.ZipFile(wheel).namelist()
    for expected in ("conformance/data/suites/kip98/transactions.yaml", "conformance/data/suites/templates/acls.yaml",
                     "conformance/data/kafka/fast-timeouts.properties", "conformance/protocol/error_catalogue.yaml",
                     "conformance/suite/suite.schema.json", "conformance/report/certify/levels.yaml",
                     "conformance/report/certify/capabilities.schema.json", "conformance/targets/node_control.schema.json",
                     "conformance/protocol/specs/EndTxnRequest.json"):
        assert expected in names
    bundled = {name.removeprefix("conformance/data/") for name in names if name.startswith("conformance/data/suites/")}
    assert bundled == {str(path.relative_to(ROOT)) for path in (ROOT / "suites").rglob("*.yaml")}
    # the page templates are package data beside their module: the wheel carries every one of them
    templates = ROOT / "conformance" / "pages" / "templates"
    assert {name for name in names if name.startswith("conformance/pages/templates/")} == {
        str(path.relative_to(ROOT)) for path in templates.glob("*.j2")} != set()
    assert not [name for name in names if "__pycache__" in name or name.startswith(("tests/", "fixtures/"))]


@pytest.mark.broker
def test_installed_wheel_lists_lints_and_runs_from_any_folder(installed):
    _, venv, empty = installed
    where = _in(venv, empty, "python", "-c", "import conformance, conformance.resources as r; "
                                             "print(conformance.__file__); print(r.source_tree())")
    assert where.returncode == 0, where.stderr
    module, tree = where.stdout.split()
    assert Path(module).is_relative_to(venv) and tree == "None"  # the checkout is not what runs

    listed = _in(venv, empty, "conformance", "list")
    assert listed.returncode == 0, listed.stderr
    assert "commit-one-partition" in listed.stdout and "produce-zstd" in listed.stdout
    assert len(listed.stdout.splitlines()) > 100
    linted = _in(venv, empty, "conformance", "lint")
    assert linted.returncode == 0 and re.search(r"\d+ suites, \d+ cases OK", linted.stdout), linted.stdout

    targets = _in(venv, empty, "conformance", "targets")
    row = next((line for line in targets.stdout.splitlines() if line.startswith("rdkafka-mock")), "")
    if not row.endswith("\tyes"):
        pytest.skip(f"rdkafka-mock cannot run here: {row or targets.stdout}")
    ran = _in(venv, empty, "conformance", "run", "--target", "rdkafka-mock", "suites/protocol/produce-fetch.yaml",
              "--", "-p", "no:randomly", "-k", "produce-gzip or produce-snappy or produce-lz4 or produce-zstd")
    assert ran.returncode in (0, 1), ran.stdout[-3000:] + ran.stderr[-3000:]  # 1: findings on the mock
    assert "Warning" not in ran.stdout, ran.stdout[-3000:]
    results = empty / "reports" / "results.jsonl"
    records = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    assert {record["case"] for record in records} == {"produce-gzip", "produce-snappy", "produce-lz4", "produce-zstd"}
    assert [record for record in records if record["outcome"] == "passed"]
    assert not [record for record in records if record["outcome"] == "error"]  # the codecs are all there
    assert (empty / "reports" / "allure-results").is_dir()
    assert not list(venv.rglob("results.jsonl"))  # nothing written into the install


@pytest.mark.broker
def test_installed_wheel_renders_pages_from_its_templates(installed, tmp_path):
    _, venv, _ = installed
    results = write_jsonl(tmp_path / "results.jsonl", [record("commit", 3, "passed"), record("abort", 3, "failed")])
    certified = _in(venv, tmp_path, "conformance", "certify", "--results", str(results), "-o", "certification")
    assert certified.returncode in (0, 1), certified.stdout[-3000:] + certified.stderr[-3000:]
    page = next((tmp_path / "certification").glob("kafka-*/index.html")).read_text(encoding="utf-8")
    assert "<svg xmlns='http://www.w3.org/2000/svg' class='matrix'" in page and "kip98.transactions::abort@v3" in page
