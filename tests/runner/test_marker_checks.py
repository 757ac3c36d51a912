"""A check of a transaction's end reads the markers, not read_committed's filtering (the second audit of independent brokers).

EndTxn and InitProducerId end a transaction by writing a marker after its records; hiding an aborted
transaction's records from read_committed is then Fetch's work (its aborted transactions list), which the
Fetch cases judge. Tansu and librdkafka's mock write the ABORT marker but their read_committed Fetch returns
no aborted transactions, so checks that read through read_committed failed the step that ended the
transaction: ``kip98.transactions::abort-one-partition`` and ``commit-after-abort`` (EndTxn, on both; the
commit after the abort had no effect, no COMMIT marker, and still failed) and
``kip360.producer-recovery::reinit-aborts-open-transaction`` (InitProducerId, on Tansu, which does abort).
The checks now read the log as it is (read_uncommitted: the records and the markers after them). A broker
that writes no marker, or a COMMIT after an abort, still fails.
"""

from __future__ import annotations

from conformance.suite.model import Outcome

from scripted_runs import bundled_case, run_on
from transactional_broker import OneTransactionalLog


ABORT = bundled_case("kip98/transactions.yaml", "abort-one-partition")
COMMIT_AFTER_ABORT = bundled_case("kip98/transactions.yaml", "commit-after-abort")
REINIT = bundled_case("kip360/producer-recovery.yaml", "reinit-aborts-open-transaction")


def run(case, version, *, filters=False, **behaviour):
    """``filters`` off: Tansu's and the mock's read_committed (LSO = HW, no aborted transactions listed);
    two partitions, as abort-one-partition writes to partition 1."""
    return run_on(OneTransactionalLog(filters=filters, partitions=2, **behaviour).serve(), case, version)


def test_a_broker_that_writes_the_markers_passes_whatever_its_read_committed_filtering():
    for filters in (False, True):  # False: Tansu's and the mock's read_committed, aborted records delivered
        for case, version in ((ABORT, 1), (COMMIT_AFTER_ABORT, 1), (REINIT, 4)):
            result = run(case, version, filters=filters)
            assert result.outcome is Outcome.PASSED, (case.id, filters, result.message)


def test_an_init_that_leaves_the_transaction_open_fails_on_init_producer_id():
    result = run(REINIT, 4, aborts_on_init=False)  # the mock: no marker, the records stay pending
    assert result.outcome is Outcome.FAILED, result.message
    assert result.failure.role == "under_test" and "high_watermark: expected 3, got 2" in result.message


def test_a_commit_written_after_the_abort_fails_on_end_txn():
    result = run(COMMIT_AFTER_ABORT, 1, commits_after_abort=True)
    assert result.outcome is Outcome.FAILED, result.message
    assert result.failure.role == "under_test" and "COMMIT" in result.message
