"""The error table against the shared reference table and against kafka-python's classes."""

from __future__ import annotations

import csv
import inspect
from pathlib import Path

import pytest

from conformance.protocol.errors import (
    ERRORS,
    KafkaError,
    UnknownErrorName,
    error_by_code,
    error_by_name,
    error_code,
    error_name,
)

REFERENCE_TABLE = Path(__file__).resolve().parents[3] / "shared" / "reference" / "kafka-errors.tsv"

# kafka-python keeps older names for some codes and classifies one code differently from the
# Java broker (CorruptRecordException derives from RetriableException there). Listed so that any
# *new* disagreement fails, and so that a fixed one shows up as a stale entry.
KAFKA_PYTHON_NAMES = {
    -1: "UNKNOWN",
    0: "NO_ERROR",
    6: "NOT_LEADER_FOR_PARTITION",
    10: "MESSAGE_SIZE_TOO_LARGE",
    17: "INVALID_TOPIC",
    39: "INVALID_REPLICATION_ASSIGNMENT",
}
KAFKA_PYTHON_RETRIABLE = {2: False}


def test_codes_and_names_are_unique():
    assert len({error.code for error in ERRORS}) == len(ERRORS)
    assert len({error.name for error in ERRORS}) == len(ERRORS)


def test_table_matches_reference_tsv():
    if not REFERENCE_TABLE.is_file():
        pytest.skip(f"reference table not present at {REFERENCE_TABLE}")
    with REFERENCE_TABLE.open(encoding="utf-8", newline="") as file:
        rows = list(csv.DictReader(file, delimiter="\t"))
    expected = {int(row["code"]): (row["NAME"], row["retriable"] == "yes") for row in rows}
    ours = {error.code: (error.name, error.retriable) for error in ERRORS}
    problems = [f"{code}: ours {ours.get(code)}, reference {expected.get(code)}"
                for code in sorted(set(expected) | set(ours))
                if ours.get(code) != expected.get(code)]
    assert not problems, "error table differs from the reference:\n" + "\n".join(problems)


def _kafka_python_errors() -> dict[int, list[type]]:
    errors_module = pytest.importorskip("kafka.errors")
    by_code: dict[int, list[type]] = {}
    for _, cls in inspect.getmembers(errors_module, inspect.isclass):
        code = getattr(cls, "errno", None)
        if isinstance(code, int) and hasattr(cls, "retriable"):
            by_code.setdefault(code, []).append(cls)
    return by_code


def test_table_agrees_with_kafka_python():
    problems = []
    stale = []
    for code, classes in sorted(_kafka_python_errors().items()):
        ours = error_by_code(code)
        if not ours.known:
            continue
        for cls in classes:
            their_name = getattr(cls, "message", None)
            if their_name != ours.name and KAFKA_PYTHON_NAMES.get(code) != their_name:
                problems.append(f"{code}: name {ours.name}, "
                                f"kafka-python {cls.__name__} says {their_name}")
            their_flag = bool(cls.retriable)
            if their_flag != ours.retriable and KAFKA_PYTHON_RETRIABLE.get(code) != their_flag:
                problems.append(f"{code} {ours.name}: retriable {ours.retriable}, "
                                f"kafka-python {cls.__name__} says {cls.retriable}")
        names = {getattr(cls, "message", None) for cls in classes}
        if code in KAFKA_PYTHON_NAMES and KAFKA_PYTHON_NAMES[code] not in names:
            stale.append(f"{code}: kafka-python no longer says {KAFKA_PYTHON_NAMES[code]}")
        flags = {bool(cls.retriable) for cls in classes}
        if code in KAFKA_PYTHON_RETRIABLE and KAFKA_PYTHON_RETRIABLE[code] not in flags:
            stale.append(f"{code}: kafka-python's retriable flag now agrees")
    assert not problems, "disagreements with kafka-python:\n" + "\n".join(problems)
    assert not stale, "known differences that went away:\n" + "\n".join(stale)


def test_lookup_by_code():
    assert error_by_code(51) == KafkaError(51, "CONCURRENT_TRANSACTIONS", True)
    assert error_by_code(-1).name == "UNKNOWN_SERVER_ERROR"
    assert error_name(0) == "NONE"


def test_unknown_code_gets_a_synthetic_entry():
    error = error_by_code(9999)
    assert error == KafkaError(9999, "UNKNOWN_ERROR_CODE_9999", False)
    assert not error.known
    assert error_by_code(47).known


@pytest.mark.parametrize("text", ["INVALID_PRODUCER_EPOCH", "invalid_producer_epoch",
                                  " Invalid-Producer-Epoch ", "47", "+47"])
def test_lookup_by_name_is_forgiving(text):
    assert error_by_name(text).code == 47


def test_names_round_trip_for_every_code():
    for code in [error.code for error in ERRORS] + [-7, 500, 32767]:
        assert error_code(error_name(code)) == code


def test_error_code_accepts_ints_names_and_entries():
    assert error_code(16) == 16
    assert error_code("NOT_COORDINATOR") == 16
    assert error_code(error_by_code(16)) == 16
    with pytest.raises(TypeError):
        error_code(16.0)  # type: ignore[arg-type]


def test_unknown_name_suggests_close_matches():
    with pytest.raises(KeyError) as caught:
        error_by_name("INVALID_PRODUCER_EPOC")
    assert isinstance(caught.value, UnknownErrorName)
    assert "INVALID_PRODUCER_EPOCH" in str(caught.value)


def test_unknown_name_without_close_match():
    with pytest.raises(KeyError, match="unknown Kafka error name 'xyzzy'$"):
        error_by_name("xyzzy")
