"""Write conformance/suite/kip_fingerprints.json from the KIP texts the suites cite.

    python tools/build_kip_fingerprints.py /path/to/seeds

Each ``KIP-<n>-*.txt`` of the folder whose KIP is in ``kip_facts.ERRORS_NAMED`` (the texts the suites cite as
they are) is fingerprinted (:func:`conformance.suite.quotes.fingerprint`); a KIP with several files gets them
joined. The excerpts in ``tools/kip_excerpts/`` join them: the sentences of a KIP the project found without its
whole text, each file naming its sources in ``#`` lines, which are no part of the text. No sentence of a text is
written: only hashes of its runs of words.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package, not an installed one

from conformance.suite.kip_facts import ERRORS_NAMED  # noqa: E402
from conformance.suite.quotes import DATA, fingerprint  # noqa: E402

EXCERPTS = ROOT / "tools" / "kip_excerpts"


def read(path: Path) -> str:
    """A KIP text file's text: an excerpt's ``#`` lines (its sources) left out."""
    text = path.read_text(encoding="utf-8")
    if path.parent == EXCERPTS:
        text = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    return text


def texts(*folders: Path) -> dict[str, str]:
    """KIP -> its text (several files of one KIP joined), for the KIPs the lint judges."""
    found: dict[str, str] = {}
    for folder in folders:
        for path in sorted(folder.glob("KIP-*.txt")):
            kip = re.match(r"KIP-\d+", path.name).group(0)
            if kip in ERRORS_NAMED:
                found[kip] = found.get(kip, "") + "\n" + read(path)
    return found


def main(argv: list[str]) -> int:
    folder = Path(argv[0])
    out = ROOT / "conformance" / "suite" / DATA
    data = {kip: fingerprint(text) for kip, text in sorted(texts(folder, EXCERPTS).items())}
    out.write_text(json.dumps(data, indent=0) + "\n", encoding="utf-8")
    print(f"{out}: {', '.join(f'{kip} ({len(value) // 6} runs)' for kip, value in data.items())}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
