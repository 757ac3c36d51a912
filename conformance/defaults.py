"""Where the harness reads and writes when it is not told, and the target it runs on when none is named.

Every entry point takes its defaults from here: the ``conformance`` command (``conformance.cli``) and
the pytest plugin, which a user may run without the command. Paths are relative to where the user
stands (pytest's rootdir for the plugin). The number of jobs a run takes is the runner's own
(``conformance.runner.parallel.DEFAULT_JOBS``): it depends on the machine, not on a choice made here.

This module imports nothing of the harness, so any layer may read it.
"""

import os
from pathlib import Path

DEFAULT_RESULTS = "reports/results.jsonl"  # every result of a run is appended here
DEFAULT_ALLUREDIR = "reports/allure-results"  # the Allure results of ``conformance run``, emptied first
DEFAULT_TARGET = "kafka"  # the pinned Apache Kafka release, provisioned by the harness
DEFAULT_CAPTURES = "reports/captures"  # the pcapng files of a run with --wire-capture

FLAKY_RESULTS = "reports/flaky/results.jsonl"  # ``conformance flaky``: its N runs, apart from other runs
SEMANTIC_HISTORIES = "reports/semantic"  # ``conformance semantic``: each run's history of operations
EXPLORED = "reports/explored"  # ``conformance explore``: the cases it writes, and each departure's history
CERTIFICATION_OUTPUT = "reports/certification"  # ``conformance certify``: one folder per certification
REPRODUCTION_OUTPUT = "reports/reproductions"  # ``conformance certify reproduce``: one folder per reproduction
# ``conformance certify register``: inside the interop site's usual folder, which links it as certified/
REGISTER_OUTPUT = "reports/interop/certified"
ALLURE_REPORT = "reports/allure-report"  # ``conformance report allure``: the HTML report
ANALYSIS_OUT = "reports/analysis"  # ``conformance analyze``: Parquet tables and a page per job


def cache_root() -> Path:
    """Where the harness keeps what it downloads or builds between runs (Kafka's jars, class archives, codecs):
    ``CONFORMANCE_CACHE``, else ``~/.cache/kafka-conformance``."""
    return Path(os.environ.get("CONFORMANCE_CACHE") or Path.home() / ".cache" / "kafka-conformance")
