"""Expectation matchers: error codes by name, number and operator."""

from conformance.suite.matchers import match_value


def test_error_names_lists_and_operators():
    assert match_value(47, "INVALID_PRODUCER_EPOCH", is_error=True) is None
    assert match_value(90, ["PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"], is_error=True) is None
    assert match_value(51, {"ne": "NONE"}, is_error=True) is None
    assert match_value(0, {"ne": "NONE"}, is_error=True) == "ne NONE failed for NONE"
    assert match_value(0, "PRODUCER_FENCED", is_error=True) == "expected PRODUCER_FENCED, got NONE (0)"


def test_a_draft_code_given_by_number_is_reported_by_number_first():
    # 85 was CONCURRENT_PRODUCER_COMMIT in the KIP-447 draft; Kafka's table has NO_REASSIGNMENT_IN_PROGRESS.
    assert match_value(85, 85, is_error=True) is None
    assert match_value(0, 85, is_error=True) == "expected 85 (Kafka: NO_REASSIGNMENT_IN_PROGRESS), got NONE (0)"
