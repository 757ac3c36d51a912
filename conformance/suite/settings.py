"""A broker setting is not a protocol rule.

A topic created with Kafka's settings (``configs: {message.timestamp.before.max.ms: ...}``) behaves as Apache
Kafka's setting makes it behave; no KIP obliges another broker to know that key, let alone honour it. So a
case that expects a refusal from a topic it configured (the refusal being that setting's effect) describes
Kafka, and is IMPLEMENTATION. The loader refuses such a case at another level; the runner skips it, naming
the key, on a target that does not know the setting (``runner/resources.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from . import tree


def configured_topics(steps, topics: dict[str, dict]) -> dict[str, list[str]]:
    """The topics ``steps`` name that the suite creates with settings, with those settings' keys."""
    texts = [text for text in tree.texts(steps) if "${" in text]
    return {name: sorted(options["configs"]) for name, options in topics.items()
            if isinstance(options, dict) and options.get("configs")
            and any(re.search(rf"\$\{{[^}}]*\btopic(s|_ids)\.{re.escape(name)}\b", text) for text in texts)}


def expects_refusal(steps) -> bool:
    """Whether any step expects an error code other than NONE, or a refusal."""
    for expect in (item for key, item in tree.entries(steps) if key == "expect" and isinstance(item, dict)):
        if expect.get("refused"):
            return True
        code = expect.get("error_code")
        codes = code.values() if isinstance(code, dict) else [code]
        if any(value not in (None, "NONE", ["NONE"]) for value in codes):
            return True
    return False


def settings_relied_on(case: dict, steps, topics: dict[str, dict], where: list) -> Iterator[tuple[list, str]]:
    """``(path, message)`` where a MUST, SHOULD or MAY case expects a refusal from a topic it configured and
    says the refusal is the setting's: its title, cites or a step's label names the key or its value (a
    topic that merely has settings, a replicated one the case moves the leader of, is not flagged)."""
    configured = configured_topics(steps, topics)
    labels = [item for key, item in tree.entries(steps) if key == "label" and isinstance(item, str)]
    words = " ".join(str(case.get(key, "")) for key in ("title", "cites")) + " " + " ".join(labels)
    relied = sorted({key for name, keys in configured.items() for key in keys
                     if key in words or _named_value(topics[name]["configs"][key], words)})
    if relied and expects_refusal(steps):
        keys = ", ".join(relied)
        yield [*where, "requirement"], (f"expects a refusal from a topic created with Apache Kafka's settings "
                                        f"({keys}): a broker setting is not a protocol rule, so the case is "
                                        "requirement: IMPLEMENTATION")


def _named_value(value, words: str) -> bool:
    text = str(value)
    return len(text) >= 4 and not text.isdigit() and text.lower() in words.lower()
