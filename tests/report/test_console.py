"""``conformance run``'s console (progress per target, one compact entry per departing case) and ``conformance show``.

The plugin's own runs go through pytester with the plugin tests' fake runner (tests/support/plugin_runs.py); the
end-to-end ones run real cases against a scripted broker (tests/support/fake_kafka.py), so transcripts are real.
"""

from __future__ import annotations

import io
import json

import pytest

from conformance.cli import main
from conformance.report.console import compact
from conformance.report.console import progress
from conformance.results.store import read_lines
from conformance.results.record import Outcome

from fake_kafka import FakeKafka
from report_records import result_record as record, write_jsonl
import plugin_runs
from plugin_runs import COMMIT, EPOCH, NO_API, FakeRunner, run

pytest_plugins = ["pytester"]

outcomes, suites = plugin_runs.outcomes, plugin_runs.suites  # the plugin tests' fake target and runner, as fixtures
COMPACT = ("--conformance-console", "compact")
TRANSCRIPT_LINE = "-> EndTxn v1 committed=true"  # what the fake runner's transcript shows


# ------------------------------------------------------------------------------ compact entries
def test_versions_fold_into_runs():
    assert compact.fold_versions([0, 1, 2, 3, 4, 5, 7]) == "v0-5, v7"
    assert compact.fold_versions([3, 1, None, 2, 9, 10]) == "v1-3, v9-10"
    assert compact.fold_versions([None]) == ""


def test_one_entry_per_departing_case_with_failed_blocked_and_error_apart():
    rows = [record("end-commits", version, "failed", expected={"error_code": "NONE"},
                   actual={"error_code": "INVALID_TXN_STATE"}) for version in (0, 1, 2, 3, 5)]
    rows += [record("end-commits", 4, "passed"), record("end-blocked", 3, "blocked"),
             record("end-blocked", 2, "blocked"), record("crashes", 1, "error", message="the runner raised:\n"
                                                         "Traceback (most recent call last):\nKeyError: 'pid'"),
             record("a", 1, "error", target="tansu", message="not run: target 'tansu' did not start\nlogs..."),
             record("b", 1, "error", target="tansu", message="not run: target 'tansu' did not start\nlogs...")]
    text = compact.render(rows)
    assert text.count("\nFAILED ") + text.startswith("FAILED ") == 1
    assert "FAILED kip98.transactions::end-commits  [kafka v0-3, v5; MUST, 5 items]" in text
    assert "    at v0:     step 2 send EndTxn (EndTxn)" in text
    assert '    expected:  {"error_code": "NONE"}' in text and '    observed:  {"error_code": "INVALID_TXN_STATE"}' in text
    assert "    reproduce: conformance run --target kafka --item kip98.transactions::end-commits@v0" in text
    assert "    cites:     KIP-98: a hand-made citation for end-commits" in text
    blocked = text[text.index("--- BLOCKED"):text.index("--- ERROR")]
    assert "BLOCKED kip98.transactions::end-blocked  [kafka v2-3; MUST, 2 items]" in blocked
    assert "    at v2:     step 2 send EndTxn (setup, AddPartitionsToTxn)" in blocked  # the lowest version first
    errors = text[text.index("--- ERROR"):]
    assert "    message:   at v1: the runner raised: KeyError: 'pid'" in errors
    assert "ERROR 2 items of 2 cases on tansu: not run: target 'tansu' did not start" in errors
    assert "differs" not in text and "passed" not in text


# ------------------------------------------------------------------------------ the plugin's console
def fold_commit_at_v1(monkeypatch):
    """commit-one-partition departs at v0 and v2 and passes at v1."""
    original = FakeRunner.run

    def run_case(self, case, version):
        result = original(self, case, version)
        if case.id == COMMIT and version == 1:
            result.outcome, result.failure, result.message = Outcome.PASSED, None, ""
        return result

    monkeypatch.setattr(FakeRunner, "run", run_case)


def test_compact_console_prints_one_entry_per_case_and_no_transcript(suites, outcomes, monkeypatch):
    outcomes[COMMIT] = Outcome.FAILED
    outcomes[NO_API] = Outcome.ERROR
    fold_commit_at_v1(monkeypatch)
    result = run(suites, "--target", "fake", *COMPACT)
    result.assert_outcomes(passed=2, failed=2, errors=1)  # pytest's last line counts every item as the table does
    output = result.stdout.str()
    assert TRANSCRIPT_LINE not in output and "transcript:" not in output
    assert "= FAILURES =" not in output and "short test summary" not in output
    assert "suites/kip98/end_txn.yaml" not in output.split("collected")[1].split("FAILED")[0]  # no letters line
    result.stdout.fnmatch_lines([
        "*- FAILED: 1 case, 2 items (the API under test departs) -*",
        "FAILED kip98.end-txn::commit-one-partition  [[]fake v0, v2; MUST, 2 items[]]",
        "    cites:     EndTxnRequest: Command true(1) means COMMIT",
        "    at v0:     step 1 send EndTxn",
        "    expected:  NONE",
        "    observed:  INVALID_TXN_STATE",
        # the test's own suite, which the harness does not ship: named by its file
        "    reproduce: conformance run --target fake --item kip98.end-txn::commit-one-partition@v0 "
        "suites/kip98/end_txn.yaml",
        "*- ERROR: 1 case, 1 item (no verdict: *) -*",
        "ERROR kip98.end-txn::no-api-case  [[]fake; MAY[]]",
        "    message:   infrastructure: connection reset by peer",
        "*each item's full record and exchanges: conformance show kip98.end-txn::commit-one-partition@v0 *",
        "conformance target fake: ran: 2 passed, 2 failed, 1 error",
        "*= 2 failed, 2 passed, 1 error in *",
    ])


def test_plain_pytest_and_verbose_keep_pytests_reports(suites, outcomes):
    outcomes[COMMIT] = Outcome.FAILED
    for arguments in ((), (*COMPACT, "-v")):
        result = run(suites, "--target", "fake", "-k", "fake-v1", *arguments)
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(["*= FAILURES =*", "transcript:", TRANSCRIPT_LINE])
        assert "progress: " not in result.stdout.str() and "--- FAILED" not in result.stdout.str()


def test_the_progress_line_counts_items_per_outcome_and_target(suites, outcomes, monkeypatch):
    monkeypatch.setattr(progress, "PLAIN_EVERY_S", 0.0)  # a line per item; not a terminal, so plain lines
    outcomes[COMMIT] = Outcome.FAILED
    outcomes[EPOCH] = Outcome.UNSUPPORTED
    result = run(suites, "--target", "fake", "--target", "fake-unavailable", *COMPACT)
    lines = [line for line in result.outlines if line.startswith(progress.PLAIN_PREFIX)]
    assert lines[0] == ("progress: fake: 1/5 items: 0 passed, 1 failed, 0 differs from Kafka, 0 blocked, 0 error, "
                        "0 unsupported, 0 skipped")
    assert lines[-2:] == [
        "progress: fake: 5/5 items: 1 passed, 3 failed, 0 differs from Kafka, 0 blocked, 0 error, 1 unsupported, "
        "0 skipped",
        "progress: fake-unavailable: 5/5 items: 0 passed, 0 failed, 0 differs from Kafka, 0 blocked, 5 error, "
        "0 unsupported, 0 skipped"]
    result.stdout.fnmatch_lines([  # the first item says why; the others, not run, are one line
        "ERROR kip98.end-txn::commit-one-partition  [[]fake-unavailable v0; MUST[]]",
        "    message:   at v0: target 'fake-unavailable' cannot run here: no fake engine on this machine",
        "*",
        "ERROR 4 items of 3 cases on fake-unavailable: not run: target 'fake-unavailable' cannot run here: *"])


def test_not_a_terminal_gets_a_line_per_target_only_every_so_often(suites, outcomes):
    result = run(suites, "--target", "fake", *COMPACT)
    assert [line for line in result.outlines if line.startswith(progress.PLAIN_PREFIX)] == [
        "progress: fake: 5/5 items: 5 passed, 0 failed, 0 differs from Kafka, 0 blocked, 0 error, 0 unsupported, "
        "0 skipped"]  # the run took less than PLAIN_EVERY_S: the final line only


class Terminal:
    def __init__(self):
        self.written = io.StringIO()

    def write(self, text, **markup):
        self.written.write(text)


def test_on_a_terminal_the_lines_are_rewritten_in_place():
    reporter = progress.ConsoleReporter(results_path="unused", run_id="r", clock=lambda: 0.0)
    reporter.terminal, reporter.tty = Terminal(), True
    width = 50  # too narrow for every outcome: those no item has yet are left out, then lines are cut
    reporter.config = type("Config", (), {"get_terminal_writer": lambda self: type("W", (), {"fullwidth": width})()})()
    reporter.totals = {"kafka": 10, "tansu": 10}
    reporter.counts = {"kafka": progress.Counter(passed=1), "tansu": progress.Counter()}
    reporter.show(final=True)
    reporter.counts["tansu"].update(failed=1, blocked=1, unsupported=1, skipped=4)
    reporter.show(final=True)
    first, second = reporter.terminal.written.getvalue().split("\x1b[K\r", 1)
    assert first == "\rkafka: 1/10 items: 1 passed, 0 failed\x1b[K\ntansu: 0/10 items: 0 passed, 0 failed"
    assert second.startswith("\x1b[1F" + "kafka: 1/10")  # up to the first line, then both again
    assert second.endswith("\ntansu: 7/10 items: 0 passed, 1 failed, 1 blocked…\x1b[K")
    written = reporter.terminal.written.getvalue().replace("\x1b[K", "").replace("\x1b[1F", "")
    drawn = [line for line in written.replace("\r", "\n").split("\n") if line]
    assert len(drawn) == 4
    assert all(len(line) <= width - 1 for line in drawn)  # no line wraps: the next draw finds them all


# ------------------------------------------------------------------------------ end to end, and conformance show
CONSOLE_SUITE = """\
suite: demo.console
title: The console of a run
spec: KIP-98
transactional_ids: [main]
cases:
  - id: end-txn-commits
    title: EndTxn after InitProducerId commits
    cites: "KIP-98: Command => boolean (false(0) means ABORT, true(1) means COMMIT)"
    under_test: {api: EndTxn, versions: "0-3"}
    steps:
      - send: InitProducerId
        fields: {transactional_id: "${txn_ids.main}", transaction_timeout_ms: 60000, producer_id: -1,
                 producer_epoch: -1}
        expect: {error_code: NONE}
        save: {pid: producer_id, epoch: producer_epoch}
      - send: EndTxn
        fields: {transactional_id: "${txn_ids.main}", producer_id: "${pid}", producer_epoch: "${epoch}",
                 committed: true}
        expect: {error_code: NONE}
"""


@pytest.fixture
def console_run(tmp_path, monkeypatch, capsys):
    """``conformance run`` of CONSOLE_SUITE against a broker whose EndTxn fails at v0, v1 and v3."""
    def handler(api, version, body):
        return {"error_code": 48} if api == "EndTxn" and version != 2 else None  # INVALID_TXN_STATE

    broker = FakeKafka(handler)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "console.yaml").write_text(CONSOLE_SUITE)
    try:
        exit_code = main(["run", "--target", broker.address, "console.yaml", "--results", "results.jsonl",
                          "--alluredir", "", "--run-id", "console", "--",
                          "-p", "no:cacheprovider", "-p", "no:hypothesispytest"])
    finally:
        broker.stop()
    assert exit_code == pytest.ExitCode.TESTS_FAILED
    return broker, capsys.readouterr().out


def test_a_run_prints_one_compact_entry_and_keeps_the_exchanges_in_the_results(console_run):
    broker, output = console_run
    assert "transcript" not in output and "InitProducerId v" not in output and "FAILURES" not in output
    assert f"FAILED demo.console::end-txn-commits  [{broker.address} v0-1, v3; MUST, 3 items]" in output
    assert "    at v0:     step 2 send EndTxn (EndTxn)" in output
    assert "    expected:  NONE\n    observed:  INVALID_TXN_STATE" in output
    assert (f"    reproduce: conformance run --target {broker.address} --item demo.console::end-txn-commits@v0 "
            "console.yaml") in output  # a suite the harness does not ship: named by its file
    assert "conformance show demo.console::end-txn-commits@v0 --results results.jsonl" in output
    failed = [row for row in read_lines("results.jsonl") if row["outcome"] == "failed"]
    assert len(failed) == 3 and all(row["transcript"] for row in failed)


@pytest.mark.parametrize("form", ["nodeid", "label", "substring"])
def test_show_finds_an_item_by_each_id_form_and_prints_its_exchanges(console_run, capsys, form):
    broker, _ = console_run
    item = {"nodeid": f"console.yaml::end-txn-commits[{broker.address}-v1]",
            "label": "demo.console::end-txn-commits@v1", "substring": "commits@v1"}[form]
    assert main(["show", item, "--results", "results.jsonl"]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith(f"demo.console::end-txn-commits@v1  [{broker.address}")
    assert "outcome:    failed (MUST, pytest: failed)" in shown
    assert "cites:      KIP-98: Command => boolean (false(0) means ABORT, true(1) means COMMIT)" in shown
    assert "step:       2 send EndTxn (under_test, EndTxn)" in shown
    assert "expected:   NONE\nactual:     INVALID_TXN_STATE\n" in shown
    assert "exchanges):" in shown
    exchanges = shown[shown.index("exchanges):"):]
    assert " InitProducerId v" in exchanges and " EndTxn v1 " in exchanges
    assert '"error_code":48' in exchanges and '"committed":true' in exchanges  # the bodies, in full


def test_show_says_when_the_transcript_was_not_kept_and_how_to_get_it(console_run, capsys):
    assert main(["show", "end-txn-commits@v2", "--results", "results.jsonl"]) == 0
    shown = capsys.readouterr().out
    assert "outcome:    passed" in shown
    assert "no transcript in the results: this item passed, and a run keeps the exchanges of items that do not " \
           "pass only" in shown
    assert "--transcripts all" in shown.splitlines()[-1] and "conformance run --target" in shown.splitlines()[-1]


def test_show_lists_the_items_an_ambiguous_id_names_and_fails(console_run, capsys):
    assert main(["show", "end-txn-commits", "--results", "results.jsonl"]) == 1
    error = capsys.readouterr().err
    assert "'end-txn-commits' names 4 items" in error and "demo.console::end-txn-commits@v3" in error
    assert main(["show", "no-such-case", "--results", "results.jsonl"]) == 1
    assert "no item in results.jsonl matches 'no-such-case'" in capsys.readouterr().err
    assert main(["show", "end-txn-commits@v0", "--results", "results.jsonl", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["api_version"] == 0


def test_show_reads_each_items_latest_record(tmp_path, capsys):
    results = write_jsonl(tmp_path / "r.jsonl", [record("c", 1, "failed", run_id="one"),
                                                 record("c", 1, "passed", run_id="two")])
    assert main(["show", "c@v1", "--results", str(results)]) == 0
    assert "outcome:    passed" in capsys.readouterr().out
    assert main(["show", "c@v1", "--results", str(results), "--run-id", "one"]) == 0
    assert "outcome:    failed" in capsys.readouterr().out


def test_while_the_run_waits_on_an_item_a_terminal_gets_a_line_every_tick():
    """The reporter's own clock (a thread calling tick) draws a line at least every TICK_S while no item is
    reported, saying how long the run took, what runs and the crashes attributed. The clock and the waits are the
    test's: nothing depends on the machine's speed."""
    now = [0.0]
    status = {"mock": {"ran": 7, "under_way": ["kip98.b::c v2", "kip848.a::b v3", "kip98.d::e v1"], "crashes": 2}}
    reporter = progress.ConsoleReporter(results_path="unused", run_id="r", clock=lambda: now[0],
                                        status=lambda: status)
    reporter.terminal, reporter.tty = Terminal(), True
    reporter.config = type("Config", (), {"get_terminal_writer": lambda self: type("W", (), {"fullwidth": 400})()})()
    reporter.totals, reporter.counts = {"mock": 10}, {"mock": progress.Counter(passed=3)}
    reporter.began = reporter.last_draw = 0.0
    answers = iter([False] * 6 + [True])  # six ticks, then stopped

    def wait(seconds):
        now[0] += seconds
        return next(answers)

    reporter.start_ticking(wait=wait)
    reporter._ticker.join(timeout=10)
    drawn = [line for line in reporter.terminal.written.getvalue().replace("\x1b[K", "").split("\r") if line]
    assert len(drawn) == 6 and progress.TICK_S <= 5
    assert drawn[0] == ("mock: 3/10 items: 3 passed, 0 failed, 0 differs from Kafka, 0 blocked, 0 error, "
                        "0 unsupported, 0 skipped; 1s; 7 ran, 3 under way (kip848.a::b v3, kip98.b::c v2, ...); "
                        "2 crashes attributed")
    assert drawn[-1].split("; ")[1] == "6s"


def test_not_a_terminal_gets_a_line_while_the_run_waits_long_on_an_item():
    now = [0.0]
    reporter = progress.ConsoleReporter(results_path="unused", run_id="r", clock=lambda: now[0])
    reporter.terminal, reporter.tty = Terminal(), False
    reporter.terminal.write_line = lambda text, **markup: reporter.terminal.write(text + "\n")
    reporter.totals, reporter.counts = {"mock": 10}, {"mock": progress.Counter(passed=3)}
    reporter.began = reporter.last_draw = 0.0
    now[0] = progress.PLAIN_TICK_S - 1
    reporter.tick()
    assert reporter.terminal.written.getvalue() == ""  # a line came less than PLAIN_TICK_S ago
    now[0] = progress.PLAIN_TICK_S
    reporter.tick()
    assert reporter.terminal.written.getvalue().startswith("progress: mock: 3/10 items: 3 passed") \
        and reporter.terminal.written.getvalue().endswith("; 30s\n")
