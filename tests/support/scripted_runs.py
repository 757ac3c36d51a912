"""Running one case against a scripted broker (fake_kafka.FakeKafka) the way a run does, for verdict tests."""

from __future__ import annotations

import textwrap
from pathlib import Path

from conformance.runner.runner import Runner
from conformance.runner.steps import bundled
from conformance.suite.loader import load_suite_file
from conformance.suite.model import Case, CaseResult
from conformance.targets.hostport import HostPortTarget

SUITES = Path(__file__).resolve().parents[2] / "suites"


# A case that needs one topic of its own, and judges nothing but a Metadata answer naming it.
A_TOPIC_CASE = """\
    suite: selftest.topics
    title: a case that needs a topic
    spec: Kafka protocol guide
    topics:
      out: {partitions: 1}
    cases:
      - id: produce-to-a-topic
        title: a Metadata request naming the case's topic
        cites: "Kafka protocol guide: a hand-made citation"
        steps:
          - send: Metadata
            fields: {topics: [{name: "${topics.out}"}], allow_auto_topic_creation: false}
            expect: {fields: {"topics[0].error_code": NONE}}
"""


def run_on(broker, case: Case, version: int | None, *, run_id: str = "scripted") -> CaseResult:
    """One item of ``case`` at ``version`` against ``broker``, which is stopped afterwards."""
    target = HostPortTarget(broker.address)
    target.start()
    runner = Runner(target, run_id=run_id, timeout=2.0)
    try:
        return runner.run(case, version)
    finally:
        runner.close()
        broker.stop()


def written_case(folder: Path, text: str) -> Case:
    """The first case of a suite written from ``text`` (dedented) into ``folder``; it must load cleanly."""
    path = folder / "scripted.yaml"
    path.write_text(textwrap.dedent(text))
    suite, errors = load_suite_file(path, components=bundled())
    assert not errors, errors
    return suite.cases[0]


def bundled_case(suite_file: str, case_id: str) -> Case:
    """A case of the bundled suites (``kip98/transactions.yaml``, ``commit-after-abort``)."""
    suite, errors = load_suite_file(SUITES / suite_file, components=bundled())
    assert not errors, errors
    return next(case for case in suite.cases if case.id == case_id)
