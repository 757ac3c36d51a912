"""Each known-bugs ledger entry with cases is found where it lives: its cases depart on the entry's last
affected release and pass on the release that fixed it (conformance/ledger/kafka-bugs.yaml, ``verify``).

One broker per release (behind the fault proxy, or a three-node cluster, for an entry whose cases need it), only
the entries' own cases. The jars come from Maven Central the first time
(cached in ~/.cache/kafka-conformance); without Maven Central, java or the jars, the release is skipped
with the reason. docs/generated/known-bugs.md shows the same runs made by ``conformance releases --known-bugs``.
"""

from __future__ import annotations

import os

import pytest

from conformance import ledger, resources
from conformance.extension import Extensions
from conformance.results import case_id
from conformance.runner.parallel import items_of, run_items
from conformance.runner.runner import Runner
from conformance.runner.steps import bundled
from conformance.suite.loader import load_suites
from conformance.targets.base import TargetUnavailable
from conformance.targets.kafka.broker import java_executable
from conformance.targets.kafka.jars import ensure_kafka_jars
from conformance.targets.registry import resolve

pytestmark = pytest.mark.broker  # starts one Apache Kafka release per test

CHECKED = [bug for bug in ledger.bugs() if bug.verify]
DEPARTED = ("failed", "differs")
# Entries left out of a default run (CONFORMANCE_LEDGER_ALL=1 runs them; `conformance releases --known-bugs` always
# does), each for its reason:
OPT_IN = {
    # their cases take a producer through some 32,000 epochs on a three-node cluster, then fail over (about 6
    # minutes here for KAFKA-20357's two cases at three versions, 1 to 3 minutes per release for KAFKA-20310's one);
    # KAFKA-20357 is unfixed, so its verdict only changes with a new release
    "KAFKA-20357": "slow: a three-node cluster and the end of the epoch space",
    "KAFKA-20310": "slow: a three-node cluster and the end of the epoch space",
    # a minute alone, but on the same kafka:4.4.0,nodes=3 as KAFKA-20357's long cases, which would run with it
    "KAFKA-20734": "shares its three-node 4.4.0 cluster with KAFKA-20357's long cases",
    # every item that reached a verdict held (3.7.0 departed 20 of 20, 3.7.1 passed 22 of 22), but a fresh 3.7
    # three-node cluster leaves the first transactional InitProducerId unanswered for 60 s in many runs (3.7.0: 4
    # of 14, 3.7.1: 8 of 16, on a loaded and on a quiet machine; after the coordinator had loaded and the broker
    # had its producer ids), which blocks the item: a CI failure that would say nothing about the bug
    "KAFKA-16386": "a fresh 3.7 three-node cluster sometimes leaves its first InitProducerId unanswered under load",
}
RUN_ALL = os.environ.get("CONFORMANCE_LEDGER_ALL") == "1"


def release_of(spec: str) -> str:
    """``proxy+kafka:3.9.2`` → ``3.9.2``; ``kafka:4.4.0,nodes=3`` → ``4.4.0``."""
    return spec.split(":", 1)[1].split(",", 1)[0]


def _target_param(spec: str):
    keys = {bug.key for bug in CHECKED for role in bug.verify_roles() if bug.verify_target(role) == spec}
    reasons = sorted({OPT_IN[key] for key in keys if key in OPT_IN})
    marks = [pytest.mark.skip(reason=f"{spec}: {'; '.join(reasons)} ({', '.join(sorted(keys))}); set "
                                     "CONFORMANCE_LEDGER_ALL=1")] if keys <= OPT_IN.keys() and not RUN_ALL else []
    return pytest.param(spec, id=spec, marks=marks)


# Target specs: kafka:RELEASE, proxy+kafka:RELEASE (the fault proxy), kafka:RELEASE,nodes=3 (a cluster).
TARGETS = [_target_param(spec) for spec in sorted({bug.verify_target(role) for bug in CHECKED
                                                   for role in bug.verify_roles()},
                                                  key=lambda spec: (ledger.release_key(release_of(spec)), spec))]


@pytest.fixture
def kafka_release(request):
    """A started broker of the release (jars fetched by the fixture), stopped after the test."""
    spec = request.param
    release = release_of(spec)
    if java_executable() is None:
        pytest.skip("java is not on PATH (set JAVA_HOME or install a JDK 17+)")
    try:
        ensure_kafka_jars(release)
    except TargetUnavailable as unavailable:  # no Maven Central (or no mvn): say so, do not fail
        pytest.skip(f"Kafka {release} jars unavailable: {str(unavailable).splitlines()[0]}")
    target = resolve(spec, Extensions.for_run().target_kinds())
    target.start()
    yield target
    target.stop()


@pytest.mark.parametrize("kafka_release", TARGETS, indirect=True)
def test_ledger_cases_fail_on_the_affected_release_and_pass_on_the_fixed_one(kafka_release):
    spec = kafka_release.spec
    release = release_of(spec)
    affected = [bug for bug in CHECKED if bug.verify_target("affected") == spec]
    fixed = [bug for bug in CHECKED if bug.verify_target("fixed") == spec]
    wanted = {case for bug in affected + fixed for case in bug.cases}
    suites, errors = load_suites([resources.suites()], components=bundled())
    assert errors == []
    cases = [case for suite in suites for case in suite.cases if case_id(suite.id, case.id) in wanted]
    long = {case for bug in affected + fixed if bug.verify.get("long") for case in bug.cases}
    names = {id(case): case_id(suite.id, case.id) for suite in suites for case in suite.cases}
    runner = Runner(kafka_release, run_id=f"selftest-ledger-{spec.replace(':', '-')}")
    try:
        items, seen = [], set()
        for case, version in items_of(runner, cases):
            # A long case first takes its producer through some 32,000 epochs: one version of it is enough.
            if names[id(case)] in long:
                if names[id(case)] in seen:
                    continue
                seen.add(names[id(case)])
            items.append((case, version))
        results = run_items(runner, items, workers=2)
    finally:
        runner.close()
    by_case: dict[str, list] = {}
    for result in results:
        by_case.setdefault(case_id(result.suite_id, result.case_id), []).append(result)

    def shown(case):
        return ", ".join(f"v{r.version} {r.outcome.value}: {r.message.splitlines()[0] if r.message else ''}"
                         for r in by_case.get(case, []))

    for bug in affected:
        for case in bug.cases:
            departed = [r for r in by_case.get(case, []) if r.outcome.value in DEPARTED]
            assert departed, f"{bug.key}: {case} does not depart on {release}, an affected release: {shown(case)}"
            assert ledger.match(case, release, spec) == bug
    for bug in fixed:
        for case in bug.cases:
            outcomes = {r.outcome.value for r in by_case.get(case, [])}
            assert "passed" in outcomes and not outcomes & {*DEPARTED, "error", "blocked"}, \
                f"{bug.key}: {case} does not pass on {release}, the fixed release: {shown(case)}"
