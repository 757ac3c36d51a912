"""The harness's own tests: how they share pytest-xdist's workers (tests/support/worker_groups.py) and, on
request, what CPU each takes."""

from __future__ import annotations

import pytest

import worker_groups

# Two hooks around xdist's own (on each worker), which turns an ``xdist_group`` mark into the ``@group`` suffix of
# the node id that loadgroup schedules by: the marks go on first (a conftest's hook otherwise runs after it, and they
# came too late), and the suffix is made to stick after (tests/support/worker_groups.py). Without both, every test
# went wherever it would: each worker started its own Spark session and its own copy of a module's brokers.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each test's group and the groups' order."""
    worker_groups.assign(items)


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(worker_groups.KeepTheSuffixesXdistWrote(), "keep-the-suffixes-xdist-wrote")
    _spark_jvms_compile_quickly()


# Spark's drivers and executors in these tests run small jobs and end: the C2 compiler's work never pays for itself.
# As the provisioned Kafka brokers do (conformance/targets/kafka/broker.py), they compile with C1 alone: the Spark
# tests took 23% less CPU, in the same time (tests/analysis/test_analysis.py: 113 -> 87 CPU-s). The product's own
# sessions are left as Spark starts them: a user's analysis can be long enough for C2 to pay.
SPARK_DEFAULTS = ("spark.driver.defaultJavaOptions -XX:TieredStopAtLevel=1\n"
                  "spark.executor.defaultJavaOptions -XX:TieredStopAtLevel=1\n")


def _spark_jvms_compile_quickly() -> None:
    """Points ``SPARK_CONF_DIR`` (unless set) at a folder whose ``spark-defaults.conf`` holds :data:`SPARK_DEFAULTS`:
    every Spark JVM the tests start reads it, those of their child processes too (``conformance analyze``,
    ``spark-submit``, a standalone cluster's executors)."""
    import os
    import tempfile
    from pathlib import Path

    if "SPARK_CONF_DIR" in os.environ:
        return
    folder = Path(tempfile.gettempdir()) / f"conformance-tests-spark-conf-{os.getuid()}"
    folder.mkdir(exist_ok=True)
    defaults = folder / "spark-defaults.conf"
    if not defaults.exists() or defaults.read_text() != SPARK_DEFAULTS:
        defaults.write_text(SPARK_DEFAULTS)
    os.environ["SPARK_CONF_DIR"] = str(folder)


@pytest.fixture(scope="session")
def standalone_spark():
    """One Spark standalone cluster (a master and a worker, from pyspark's distribution) for every test that submits
    to one: worker_groups puts them on one worker, so its two daemons start once. The executors' Python workers
    import this checkout: the daemons pass their environment on, so ``PYTHONPATH`` names it while they start. At the
    end, no daemon may be left behind."""
    pytest.importorskip("pyspark")
    import os
    from pathlib import Path

    import conformance
    from conformance.analysis.spark_cluster import StandaloneCluster

    root = str(Path(conformance.__file__).resolve().parents[1])
    cluster = StandaloneCluster(cores=1, memory="1g")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
        cluster.start()
    daemons = list(cluster.processes)
    try:
        yield cluster
    finally:
        cluster.stop()
    assert all(process.poll() is not None for process in daemons), "a Spark daemon outlived StandaloneCluster.stop()"


def _cpu_seconds() -> float:
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """With CONFORMANCE_TEST_CPU=DIR, each worker writes a line per test to DIR: the CPU seconds the test took,
    its own and its processes' (a broker it started counts when it is reaped: at the teardown that stops it).
    This is how the tests' CPU was found (docs/how-to/develop.md); CI does not set it."""
    import os
    import time

    folder = os.environ.get("CONFORMANCE_TEST_CPU")
    if not folder:
        yield
        return
    cpu, wall = _cpu_seconds(), time.monotonic()
    yield
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(os.path.join(folder, f"{worker}.tsv"), "a", encoding="utf-8") as out:
        out.write(f"{_cpu_seconds() - cpu:.2f}\t{time.monotonic() - wall:.2f}\t{item.nodeid}\n")
