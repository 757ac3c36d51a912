"""Allure keeps the transcripts the results file keeps (``--transcripts``): a departing item's exchanges by
default, every item's with ``all``; its artifacts (captures) always."""

from __future__ import annotations

import pytest

from conformance.report import allure as allure_report
from conformance.report.sinks import AllureSink
from conformance.suite.model import CaseResult
from conformance.results.record import Outcome, Requirement


class Attached:
    def __init__(self):
        self.names = []

    def __call__(self, body, name, attachment_type=None, extension=None):
        self.names.append(name)


@pytest.fixture
def attached(monkeypatch):
    if allure_report.allure is None:
        pytest.skip("allure-pytest is not installed")
    recorder = Attached()
    monkeypatch.setattr(allure_report.allure, "attach", recorder)
    return recorder


def result() -> CaseResult:
    return CaseResult(case_id="c", suite_id="s", title="t", kip="KIP-98", api="EndTxn", version=3, target="fake",
                      target_version=None, outcome=Outcome.PASSED, requirement=Requirement.MUST, cites="", duration_s=0,
                      transcript=[{"api": "EndTxn"}], transcript_text="-> EndTxn v3")


@pytest.mark.parametrize(("line", "names"), [({"transcript": []}, []),
                                             ({"transcript": [{"api": "EndTxn"}]}, ["transcript", "transcript.json"])])
def test_the_transcript_is_attached_where_the_results_line_keeps_it(attached, line, names):
    AllureSink.record(AllureSink.__new__(AllureSink), result(), line)
    assert attached.names == names
