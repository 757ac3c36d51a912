"""Codec.warm compiles ahead of first use (while a target starts) and never fails anything."""

from __future__ import annotations

from conformance.protocol.codec import Codec


def test_warming_compiles_both_directions_and_skips_what_the_specs_do_not_know():
    codec = Codec()
    codec.warm([("EndTxn", 3), ("EndTxn", 999), ("NoSuchApi", 0)])
    assert {key for key in codec._compiled} == {("EndTxnRequest", 3, False), ("EndTxnResponse", 3, False)}
    before = dict(codec._compiled)
    assert codec.encode("EndTxn", 3, "request", {"transactional_id": "t", "producer_id": 1, "producer_epoch": 0,
                                                 "committed": True})
    assert codec._compiled == before  # the first use found it compiled
