"""How the harness's own tests share the workers: which tests must run together, and which go first.

CI runs the tests on four pytest-xdist workers (``-n 4``) with ``--dist loadgroup --no-loadscope-reorder``
(pyproject.toml): tests/conftest.py gives every test an ``xdist_group`` from here, a group runs whole on one worker, and the workers
take the groups in the order this file sorts them. The groups:

- Tests that share a fixture living longer than one test (a module's broker, a cluster, a Spark session)
  stay together: one group per module, and per value of a parametrized module fixture (each secured listener
  of ``test_secured_kafka`` starts its own broker, so each is a group of its own and they run side by side).
- Tests marked ``spark`` (they start a local Spark session) share one group, so one worker's JVM serves them
  all instead of each module starting one; so do the tests of any module that use a session fixture of a
  conftest.py (``standalone_spark``: one Spark standalone cluster), named after it.
- The other tests of a module that starts brokers are groups of one: each starts what it needs, and the
  minutes-long ones spread over the workers instead of queueing behind each other in one file.

The longest groups go first (``LONGEST_FIRST``, measured) and then the rest of the broker tests, so the run
ends on short tests rather than on a long one started last. xdist's own reordering (by number of tests) is off:
it put a three-test module of four minutes after modules of many quick tests.
"""

from __future__ import annotations

import pytest

# Groups whose tests take the longest in a full run, longest first (seconds of wall time summed over their tests in a
# run of four workers on the 2-core machine, 6df2736: the Spark tests together 540, three nodes 322, secured listeners
# 649 in five groups, the whole suite on brokers 346 in several, the two tests on one standalone Spark cluster 254,
# exactly-once 242, releases 126). The Spark group goes first: it is a worker's first half.
LONGEST_FIRST = (
    "spark",
    "tests/targets/test_target_kafka_cluster.py",
    "tests/targets/test_secured_kafka.py",
    "tests/bundled_suites/test_suites_on_brokers.py",
    "standalone_spark",
    "tests/semantic/test_semantic_live.py",
    "tests/ledger/test_ledger_releases.py",
)
SPARK_GROUP = "spark"


def _shared_fixtures(item: pytest.Item) -> dict:
    """Fixtures of this project (not pytest's own) that outlive one test, by name, each with its definition: what ties
    a test to its module, or (a session fixture of a conftest.py, whose ``baseid`` is a folder) to every module."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return {}
    return {name: definitions[-1] for name, definitions in info.name2fixturedefs.items()
            if definitions and definitions[-1].scope != "function" and definitions[-1].baseid}


def group_of(item: pytest.Item) -> str:
    module = item.nodeid.split("::", 1)[0]
    if item.get_closest_marker("spark") is not None:
        return SPARK_GROUP
    shared = _shared_fixtures(item)
    across = [name for name, fixture in shared.items() if fixture.scope == "session" and not fixture.baseid.endswith(".py")]
    if across:  # standalone_spark
        return across[0]
    if shared:
        params = getattr(getattr(item, "callspec", None), "params", {})
        values = [str(params[name]) for name in shared if name in params]
        return module + ("[" + ",".join(values) + "]" if values else "")
    if item.get_closest_marker("broker") is not None:
        return item.nodeid
    return module


def rank(group: str, module: str, starts_a_broker: bool) -> int:
    for index, name in enumerate(LONGEST_FIRST):
        if group == name or module == name:
            return index
    return len(LONGEST_FIRST) + (0 if starts_a_broker else 1)


def assign(items: list[pytest.Item]) -> None:
    """Marks each item with its ``xdist_group`` and sorts the items: the longest groups first, a group's items
    together and in their own order."""
    ranks = {}
    for item in items:
        group = group_of(item)
        item.add_marker(pytest.mark.xdist_group(group))
        module = item.nodeid.split("::", 1)[0]
        ranks[item.nodeid] = rank(group, module, item.get_closest_marker("broker") is not None)
    items.sort(key=lambda item: ranks[item.nodeid])  # stable: a group's items keep their order


class KeepTheSuffixesXdistWrote:
    """pytest-xdist 3.8 adds the ``@group`` suffix by rewriting ``item._nodeid``, which pytest 9.2 no longer reads:
    its node ids are structured (``item._id``), so the suffix was lost and loadgroup scheduled every test alone
    (pytest-dev/pytest-xdist#1386; the fix, #1388, is in no release yet). After xdist's hook, where that write was
    lost, this makes it where pytest reads; with an xdist that writes it there itself, or an older pytest, it does
    nothing."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        from _pytest.nodes import NodeId

        for item in items:
            written = getattr(item, "_nodeid", None)
            if isinstance(written, str) and written != item.nodeid and isinstance(getattr(item, "_id", None), NodeId):
                item._id = NodeId.parse(written)
