"""How the harness's own tests share the workers: which tests must run together, and which go first.

CI runs the tests on four pytest-xdist workers (``-n 4``) with ``--dist loadgroup --no-loadscope-reorder``
(pyproject.toml): every test gets an ``xdist_group`` here, a group runs whole on one worker, and the workers
take the groups in the order this file sorts them. The groups:

- Tests that share a fixture living longer than one test (a module's broker, a cluster, a Spark session)
  stay together: one group per module, and per value of a parametrized module fixture (each secured listener
  of ``test_secured_kafka`` starts its own broker, so each is a group of its own and they run side by side).
- Tests marked ``spark`` (they start a local Spark session) share one group, so one worker's JVM serves them
  all instead of each module starting one.
- The other tests of a module that starts brokers are groups of one: each starts what it needs, and the
  minutes-long ones spread over the workers instead of queueing behind each other in one file.

The longest groups go first (``LONGEST_FIRST``, measured) and then the rest of the broker tests, so the run
ends on short tests rather than on a long one started last. xdist's own reordering (by number of tests) is off:
it put a three-test module of four minutes after modules of many quick tests.
"""

from __future__ import annotations

import pytest

# Groups whose tests take the longest in a full run, longest first (seconds of wall time summed over their tests in a
# run of four workers on the 2-core machine: the Spark tests together 743, three nodes 371, secured listeners 600 in
# five groups, the whole suite on brokers 476 in four, a standalone Spark cluster 217, exactly-once 264, Spark's
# explorer on a standalone cluster 128, releases 143). The Spark group goes first: it alone is most of a worker's run.
LONGEST_FIRST = (
    "spark",
    "tests/targets/test_target_kafka_cluster.py",
    "tests/targets/test_secured_kafka.py",
    "tests/bundled_suites/test_suites_on_brokers.py",
    "tests/analysis/test_analysis_cluster.py",
    "tests/semantic/test_semantic_live.py",
    "tests/explore/test_explore_spark.py",
    "tests/ledger/test_ledger_releases.py",
)
SPARK_GROUP = "spark"


def _shared_fixtures(item: pytest.Item) -> list[str]:
    """Fixtures of this project (not pytest's own) that outlive one test: what ties a test to its module."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    return [name for name, definitions in info.name2fixturedefs.items()
            if definitions and definitions[-1].scope != "function" and definitions[-1].baseid]


def _group(item: pytest.Item) -> str:
    module = item.nodeid.split("::", 1)[0]
    if item.get_closest_marker("spark") is not None:
        return SPARK_GROUP
    shared = _shared_fixtures(item)
    if shared:
        params = getattr(getattr(item, "callspec", None), "params", {})
        values = [str(params[name]) for name in shared if name in params]
        return module + ("[" + ",".join(values) + "]" if values else "")
    if item.get_closest_marker("broker") is not None:
        return item.nodeid
    return module


def _rank(group: str, module: str, starts_a_broker: bool) -> int:
    for index, name in enumerate(LONGEST_FIRST):
        if group == name or module == name:
            return index
    return len(LONGEST_FIRST) + (0 if starts_a_broker else 1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    ranks = {}
    for item in items:
        group = _group(item)
        item.add_marker(pytest.mark.xdist_group(group))
        module = item.nodeid.split("::", 1)[0]
        ranks[item.nodeid] = _rank(group, module, item.get_closest_marker("broker") is not None)
    # a stable sort: the items of a group stay together and in their own order
    items.sort(key=lambda item: ranks[item.nodeid])


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
