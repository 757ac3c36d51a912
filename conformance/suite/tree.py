"""Walking the steps of a case as the loader parsed them: every mapping entry and every text, at any depth.

A case's properties that any key or text may carry (the principals it runs as, the suite topics it names) are read
from what the steps say, wherever they say it: in a step's own keys, in a template's body, inside an ``until`` or a
``parallel`` branch. What a step means (what it sends, the faults it asks for, whether it is rough on the target) is
its kind's to say, read through :mod:`conformance.suite.walk`. Before this walk they were
found by regular expressions over ``json.dumps(steps)``; the walk gives the same answers without reading
JSON text (a key is a key, a value a value).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping


def entries(value) -> Iterator[tuple[str, object]]:
    """``(key, value)`` of every mapping in ``value``, outer mappings first."""
    if isinstance(value, Mapping):  # a Step, a When or a plain mapping
        for key, item in value.items():
            yield str(key), item
            yield from entries(item)
    elif isinstance(value, list):
        for item in value:
            yield from entries(item)


def texts(value) -> Iterator[str]:
    """Every key and every text value in ``value`` (what a reader of the steps sees as words)."""
    if isinstance(value, Mapping):  # a Step, a When or a plain mapping
        for key, item in value.items():
            yield str(key)
            yield from texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from texts(item)
    elif isinstance(value, str):
        yield value

