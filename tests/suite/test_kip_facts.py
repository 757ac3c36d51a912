"""The facts the MUST lint checks citations against (conformance/suite/kip_facts.py) are the KIP texts' own:
recomputed here from the seed texts where they sit beside the repository (skipped elsewhere: a wheel or a
fresh clone has no copy of them, and the facts are what it keeps)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from conformance.protocol.errors import ERROR_TABLE
from conformance import resources
from conformance.suite import quotes
from conformance.suite.citations import names
from conformance.suite.kip_facts import CONDITIONED, ERRORS_NAMED


def _seeds() -> Path | None:
    for parent in Path(__file__).resolve().parents:
        if (parent / "shared" / "seeds").is_dir():
            return parent / "shared" / "seeds"
    return None


SEEDS = _seeds()
pytestmark = pytest.mark.skipif(SEEDS is None, reason="the KIP seed texts (shared/seeds) are not beside the repository")


_TOOL = importlib.util.spec_from_file_location(
    "build_kip_fingerprints", Path(__file__).resolve().parents[2] / "tools" / "build_kip_fingerprints.py")
build = importlib.util.module_from_spec(_TOOL)
_TOOL.loader.exec_module(build)


def texts() -> dict[str, str]:
    """KIP -> its seed text (a KIP with several seeds, a KIP and its revision, gets them joined), and the KIPs the
    project holds excerpts of (tools/kip_excerpts), read as the tool that fingerprints them reads them."""
    return build.texts(SEEDS, build.EXCERPTS)


def test_the_errors_each_kip_names_are_those_its_text_names():
    for kip, named in ERRORS_NAMED.items():
        text = texts()[kip]
        assert named == {name for _, name, _ in ERROR_TABLE if name != "NONE" and names(text, name)}, kip


def test_kip_447s_text_is_its_draft_and_fetch_offset_revision_joined():
    """Both KIP-447 seeds (the early draft and the revision of its fetch-offset design) are KIP-447's text: a quote
    of either is in it. The adopted design's codes (ILLEGAL_GENERATION ...) are not: they are cited from the
    message spec, and a MUST citing KIP-447 for them is refused by the lint."""
    assert "KIP-447" in ERRORS_NAMED and not names(texts()["KIP-447"], "ILLEGAL_GENERATION")
    draft = "Once the coordinator observes a generation bump for a group, it will refuse to handle requests from the previous generation"
    revision = "we will choose to send a COORDINATOR_LOAD_IN_PROGRESS exception to let it retry"
    assert quotes.missing("KIP-447", draft) is None and quotes.missing("KIP-447", revision) is None
    assert quotes.missing("KIP-447", "a zombie producer whose consumer has been fenced by a rebalance gets ILLEGAL_GENERATION")


def test_each_conditioned_error_is_tied_to_its_condition_in_one_sentence_of_its_kip():
    for (kip, code), condition in CONDITIONED.items():
        sentences = re.split(r"(?<=[.!?])\s+|\n(?!\s+[a-z])", texts()[kip])  # a javadoc line goes on indented
        assert any(names(sentence, code) and re.search(condition, sentence, re.IGNORECASE)
                   and re.search(r"\b(if|when|since|result in|indicating)\b", sentence, re.IGNORECASE)
                   for sentence in sentences), (kip, code)


def test_the_fingerprints_quotes_are_checked_against_are_those_of_the_texts():
    """conformance/suite/kip_fingerprints.json is what tools/build_kip_fingerprints.py writes from the texts."""
    packed = json.loads(resources.kip_fingerprints().read_text(encoding="utf-8"))
    assert set(packed) == set(ERRORS_NAMED)
    for kip, value in packed.items():
        assert value == quotes.fingerprint(texts()[kip]), kip


def test_a_sentence_of_the_text_is_found_and_a_paraphrase_is_not():
    """An audit of independent brokers: add-partitions-unknown-topic quoted a sentence KIP-98 does not have."""
    assert quotes.missing("KIP-98", "the request fails if any partition is unknown") is not None
    sentence = next(line for line in texts()["KIP-98"].splitlines() if "InvalidTransactionTimeout` error" in line)
    assert quotes.missing("KIP-98", sentence.upper().replace("`", "\u201c")) is None  # case and quote marks
    assert quotes.missing("KIP-98", sentence.split(",")[0] + " ... " + sentence.split(",")[1]) is None


def test_kip_588_ties_producer_fenced_to_the_coordinators_apis_from_the_versions_it_bumped():
    """KIP-588's sentences the project holds (an excerpt, its sources named in the file): PRODUCER_FENCED for every
    request to the transaction coordinator, INVALID_PRODUCER_EPOCH for Produce only, and the versions that carry it."""
    sentence = ("In essence, INVALID_PRODUCER_EPOCH should only get thrown from Produce requests and is retriable, "
                "while all transaction coordinator interacting protocols use PRODUCER_FENCED")
    assert quotes.missing("KIP-588", sentence) is None
    for bump in ("AddPartitionsToTransaction to v2", "AddOffsetsToTransaction to v2", "EndTransaction to v2",
                 "InitProducerId to v4"):
        assert quotes.missing("KIP-588", bump) is None, bump
    assert quotes.missing("KIP-588", "EndTransaction to v3") is not None
    assert quotes.missing("KIP-588", "all transaction coordinator interacting protocols use INVALID_PRODUCER_EPOCH")
