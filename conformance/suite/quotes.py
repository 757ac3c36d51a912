"""Whether a sentence quoted in ``cites`` is in the cited KIP's text.

The project may not copy KIP texts into the package, so what it keeps of each text it judges against is a
fingerprint: a short hash of every run of :data:`WINDOW` consecutive words of the text, normalised (case, quote
marks, punctuation and line breaks do not count). A quoted fragment is in the text when every run of
:data:`WINDOW` words in it is; no sentence can be read back out of the hashes. ``kip_fingerprints.json`` is
written by ``tools/build_kip_fingerprints.py`` from the KIP texts (the project's seed texts), and
``tests/suite/test_kip_facts.py`` recomputes it from them where they sit beside the repository.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import cache

from .. import resources

WINDOW = 3  # words per fingerprinted run: a shorter fragment is not judged
DIGITS = 6  # hex digits kept of each run's hash (24 bits; a made-up run of 3 words matches by chance 1 in ~3000)
DATA = "kip_fingerprints.json"  # beside this module (resources.kip_fingerprints)
ELLIPSIS = re.compile(r"\.\.\.|…|\[[^\]]*\]")  # a gap in a quote, or an editor's insertion: the fragments between


def words(text: str) -> list[str]:
    """The text's words, lower case, without punctuation or quote marks (``transaction.timeout.ms`` is three)."""
    return re.findall(r"[a-z0-9]+", text.lower())


def _hash(run: list[str]) -> str:
    return hashlib.blake2b(" ".join(run).encode(), digest_size=8).hexdigest()[:DIGITS]


def fingerprint(text: str) -> str:
    """The sorted, concatenated hashes of every run of :data:`WINDOW` words of ``text``."""
    found = words(text)
    return "".join(sorted({_hash(found[i:i + WINDOW]) for i in range(len(found) - WINDOW + 1)}))


@cache
def fingerprints() -> dict[str, frozenset[str]]:
    """KIP -> the hashes of its text's runs of words (the KIPs whose text the project has)."""
    packed = json.loads(resources.kip_fingerprints().read_text(encoding="utf-8"))
    return {kip: frozenset(value[i:i + DIGITS] for i in range(0, len(value), DIGITS)) for kip, value in packed.items()}


def fragments(quote: str) -> list[str]:
    """The pieces of a quote between its gaps (``...``, ``[...]``, an editor's ``[TxnOffsetCommit v6]``)."""
    return [piece for piece in ELLIPSIS.split(quote) if words(piece)]


def missing(kip: str, quote: str) -> str | None:
    """The first fragment of ``quote`` that ``kip``'s text does not contain; None when every fragment of
    :data:`WINDOW` words or more is in it, or when the project has no text of ``kip``."""
    known = fingerprints().get(kip)
    if known is None:
        return None
    for piece in fragments(quote):
        found = words(piece)
        if any(_hash(found[i:i + WINDOW]) not in known for i in range(len(found) - WINDOW + 1)):
            return piece.strip()
    return None
