"""Each known-bugs ledger entry with cases is found where it lives: its cases depart on the entry's last
affected release and pass on the release that fixed it (conformance/ledger/kafka-bugs.yaml, ``verify``).

One broker per release (behind the fault proxy for an entry whose cases need it), only the entries' own cases. The jars come from Maven Central the first time
(cached in ~/.cache/kafka-conformance); without Maven Central, java or the jars, the release is skipped
with the reason. docs/generated/known-bugs.md shows the same runs made by ``conformance releases --known-bugs``.
"""

from __future__ import annotations

import pytest

from conformance import ledger, resources
from conformance.extension import Extensions
from conformance.results import case_id
from conformance.runner.parallel import items_of, run_items
from conformance.runner.runner import Runner
from conformance.runner.steps import bundled
from conformance.suite.loader import load_suites
from conformance.targets.base import TargetUnavailable
from conformance.targets.kafka import java_executable
from conformance.targets.kafka_jars import ensure_kafka_jars
from conformance.targets.registry import resolve

pytestmark = pytest.mark.broker  # starts one Apache Kafka release per test

CHECKED = [bug for bug in ledger.bugs() if bug.verify]
# Target specs: kafka:RELEASE, or proxy+kafka:RELEASE for an entry whose cases need the fault proxy.
TARGETS = sorted({bug.verify_target(role) for bug in CHECKED for role in ("affected", "fixed")},
                 key=lambda spec: (ledger.release_key(spec.rsplit(":", 1)[1]), spec))
DEPARTED = ("failed", "differs")


@pytest.fixture
def kafka_release(request):
    """A started broker of the release (jars fetched by the fixture), stopped after the test."""
    spec = request.param
    release = spec.rsplit(":", 1)[1]
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
    release = spec.rsplit(":", 1)[1]
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
