"""A resent marker carries its coordinator's epoch, not the epoch of a broker never restarted.

``kip890.marker-retry::marker-resent-at-the-same-epoch-is-accepted`` differed on Kafka 4.4.0 in the suite
benchmark's "8 at a time" mode and passed alone. That mode runs on the broker its serial mode just restarted
several times, and a restart moves every ``__transaction_state`` partition's leader epoch, which is the
transaction coordinator's epoch. The case resent the coordinator's COMMIT marker with coordinator epoch 0,
which a leader must fence (TRANSACTION_COORDINATOR_FENCED) once the coordinator wrote at a later one; it
passed only where the broker had never restarted. The resend now carries the epoch the coordinator's own
marker shows in the log.
"""

from __future__ import annotations

from conformance.suite.model import Outcome

from scripted_runs import bundled_case, run_on
from transactional_broker import OneTransactionalLog

CASE = bundled_case("kip890/marker-retry.yaml", "marker-resent-at-the-same-epoch-is-accepted")


def test_the_resend_carries_the_coordinator_epoch_of_a_broker_restarted_before():
    log = OneTransactionalLog(transaction_version=2, coordinator_epoch=3)  # a broker restarted three times
    result = run_on(log.serve(), CASE, 2)
    assert result.outcome is Outcome.PASSED, result.message  # before: differs, TRANSACTION_COORDINATOR_FENCED
    assert log.marker_epochs[log.PID] == 3


def test_a_resend_that_is_fenced_still_differs():
    class FencesResends(OneTransactionalLog):
        def WriteTxnMarkers(self, version, body):
            self.marker_epochs[self.PID] += 1  # as if another coordinator had taken over meanwhile
            return super().WriteTxnMarkers(version, body)

    result = run_on(FencesResends(transaction_version=2).serve(), CASE, 2)
    assert result.outcome is Outcome.DIFFERS and "TRANSACTION_COORDINATOR_FENCED" in result.message, result.message
