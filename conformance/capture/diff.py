"""Align one case's exchanges on two targets and say, field by field, where they differ.

Exchanges are aligned by (step label, API, occurrence): the second InitProducerId of step 3
on one target meets the second InitProducerId of step 3 on the other. Captures carry no step
labels, so when either side lacks them the alignment is by (API, occurrence) alone. Lists of
structs are matched by their identity field (partition index, name ...) when every element has
one, so a broker that answers partitions in another order is not reported for every field.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..protocol.errors import error_name
from .normalise import Normaliser, Rules
from .wire import ConnectionEvent, WireExchange

IDENTITY_FIELDS = ("partition_index", "index", "partition", "name", "topic", "api_key", "transactional_id",
                   "group_id", "key", "broker_id", "node_id", "topic_id")


@dataclass
class Difference:
    kind: str  # error_code, value, absent, tagged, records, version, problem, only_in_a/b, ordering, close, outcome
    key: str  # the aligned exchange ("3 send InitProducerId / InitProducerId #1"), or "" for the whole case
    path: str = ""
    a: object = None
    b: object = None

    def to_json(self) -> dict:
        return {"kind": self.kind, "key": self.key, "path": self.path, "a": self.a, "b": self.b}

    def describe(self) -> str:
        if self.kind == "error_code":
            return f"{self.path}: {_error(self.a)} vs {_error(self.b)}"
        if self.kind in ("only_in_a", "only_in_b"):
            what = self.a if self.kind == "only_in_a" else self.b
            return f"only in {self.kind[-1].upper()}: {what}"
        if self.kind == "absent":
            side = "A" if self.b is None else "B"
            return f"{self.path}: present only in {side} ({_short(self.a if side == 'A' else self.b)})"
        return f"{self.path}: {_short(self.a)} vs {_short(self.b)}"


@dataclass
class AlignedPair:
    key: str
    a: WireExchange | None
    b: WireExchange | None
    a_view: dict | None = None
    b_view: dict | None = None
    differences: list[Difference] = field(default_factory=list)


@dataclass
class Diff:
    """The differences between two runs of one case (or two whole captures)."""

    label: str
    pairs: list[AlignedPair] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)

    @property
    def same(self) -> bool:
        return not self.differences

    def to_json(self) -> dict:
        return {"label": self.label, "same": self.same, "differences": [item.to_json() for item in self.differences],
                "aligned": len([pair for pair in self.pairs if pair.a and pair.b])}


@dataclass
class RunDiff:
    """Two results files or captures compared case by case."""

    a_name: str
    b_name: str
    cases: list[Diff] = field(default_factory=list)
    only_in_a: list[str] = field(default_factory=list)
    only_in_b: list[str] = field(default_factory=list)

    @property
    def same(self) -> bool:
        return not self.only_in_a and not self.only_in_b and all(case.same for case in self.cases)

    def to_json(self) -> dict:
        return {"a": self.a_name, "b": self.b_name, "same": self.same, "only_in_a": self.only_in_a,
                "only_in_b": self.only_in_b, "cases": [case.to_json() for case in self.cases]}


def diff_runs(a: dict[str, list], b: dict[str, list], rules: Rules | None = None, *,
              a_name: str = "A", b_name: str = "B", a_outcomes: dict[str, str] | None = None,
              b_outcomes: dict[str, str] | None = None) -> RunDiff:
    """Groups of exchanges (case key -> timeline) from two runs; keys on one side only are listed.

    ``*_outcomes`` (case key -> "passed", "unsupported: ...") come from results files: a case
    that ran on one target and was unsupported on the other is one difference, not one per
    exchange.
    """
    result = RunDiff(a_name, b_name, only_in_a=sorted(set(a) - set(b)), only_in_b=sorted(set(b) - set(a)))
    for key in sorted(set(a) & set(b)):
        outcome_a, outcome_b = (a_outcomes or {}).get(key), (b_outcomes or {}).get(key)
        exchanges_a = [item for item in a[key] if isinstance(item, WireExchange)]
        exchanges_b = [item for item in b[key] if isinstance(item, WireExchange)]
        if exchanges_a and exchanges_b:
            case = diff_exchanges(a[key], b[key], rules, label=key)
        else:
            case = Diff(key)
            if exchanges_a or exchanges_b:
                side = "only_in_a" if exchanges_a else "only_in_b"
                count = f"{len(exchanges_a or exchanges_b)} exchanges"
                case.differences.append(Difference(side, "", "exchanges", count if exchanges_a else None,
                                                   count if exchanges_b else None))
        if outcome_a and outcome_b and _first_word(outcome_a) != _first_word(outcome_b):
            case.differences.insert(0, Difference("outcome", "", "outcome", outcome_a, outcome_b))
        result.cases.append(case)
    return result


def _first_word(text: str) -> str:
    return text.split(":", 1)[0]


def diff_exchanges(a: list, b: list, rules: Rules | None = None, *, label: str = "") -> Diff:
    """Compare two timelines of :class:`WireExchange` (and optionally :class:`ConnectionEvent`)."""
    rules = rules or Rules()
    exchanges_a = [item for item in a if isinstance(item, WireExchange) and not rules.ignores(item)]
    exchanges_b = [item for item in b if isinstance(item, WireExchange) and not rules.ignores(item)]
    use_steps = any(item.step for item in exchanges_a) and any(item.step for item in exchanges_b)
    keyed_a, keyed_b = _keyed(exchanges_a, use_steps), _keyed(exchanges_b, use_steps)
    probe = Normaliser(rules)
    shared = set.intersection(*(set().union(*(probe.ordinal_values(item) for item in side)) for side in (
        exchanges_a, exchanges_b))) if exchanges_a and exchanges_b else set()
    normalise_a, normalise_b = Normaliser(rules, shared), Normaliser(rules, shared)
    views_a = {key: normalise_a.exchange(exchange) for key, exchange in keyed_a.items()}  # in order: ordinals
    views_b = {key: normalise_b.exchange(exchange) for key, exchange in keyed_b.items()}
    result = Diff(label)
    for key in _merged_order(list(keyed_a), list(keyed_b)):
        exchange_a, exchange_b = keyed_a.get(key), keyed_b.get(key)
        pair = AlignedPair(key, exchange_a, exchange_b, views_a.get(key), views_b.get(key))
        if exchange_a is None or exchange_b is None:
            kind, present = ("only_in_b", exchange_b) if exchange_a is None else ("only_in_a", exchange_a)
            summary = _summary(present) if present else None
            pair.differences.append(Difference(kind, key, a=summary if kind == "only_in_a" else None,
                                               b=summary if kind == "only_in_b" else None))
        else:
            same_version = exchange_a.version == exchange_b.version
            if not same_version:  # then fields one version lacks are expected to be absent
                pair.differences.append(Difference("version", key, "version", exchange_a.version, exchange_b.version))
            view_a, view_b = views_a[key], views_b[key]
            for part in ("request", "response", "problems"):
                if part in view_a or part in view_b:
                    _compare(view_a.get(part), view_b.get(part), part, key, pair.differences, same_version)
        result.pairs.append(pair)
        result.differences.extend(pair.differences)
    result.differences.extend(_ordering(list(keyed_a), list(keyed_b)))
    result.differences.extend(_closes(a, b, exchanges_a, exchanges_b))
    return result


def _keyed(exchanges: list[WireExchange], use_steps: bool) -> dict[str, WireExchange]:
    counts: dict[tuple, int] = {}
    keyed = {}
    for exchange in exchanges:
        base = (exchange.step or "", exchange.api) if use_steps else ("", exchange.api)
        counts[base] = counts.get(base, 0) + 1
        step = f"{base[0]} / " if base[0] else ""
        keyed[f"{step}{base[1]} #{counts[base]}"] = exchange
    return keyed


def _merged_order(a: list[str], b: list[str]) -> list[str]:
    """A's keys in A's order, each of B's extra keys right after the key it follows in B."""
    merged = list(a)
    known = set(a)
    for index, key in enumerate(b):
        if key in known:
            continue
        previous = next((b[earlier] for earlier in range(index - 1, -1, -1) if b[earlier] in known), None)
        merged.insert(merged.index(previous) + 1 if previous else 0, key)
        known.add(key)
    return merged


def _compare(a, b, path: str, key: str, out: list[Difference], same_version: bool = True) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for name in [*a, *(name for name in b if name not in a)]:
            child = f"{path}.{name}"
            if name not in a or name not in b:
                tagged = name == "_unknown_tagged" or "_unknown_tagged" in path
                if tagged or same_version:
                    out.append(Difference("tagged" if tagged else "absent", key, child, a.get(name), b.get(name)))
            else:
                _compare(a[name], b[name], child, key, out, same_version)
        return
    if isinstance(a, list) and isinstance(b, list):
        identity = identity_field(a, b)
        if identity:
            by_a = {item[identity]: item for item in a}
            by_b = {item[identity]: item for item in b}
            for value in [*by_a, *(value for value in by_b if value not in by_a)]:
                child = f"{path}[{identity}={value}]"
                if value not in by_a or value not in by_b:
                    out.append(Difference(_kind(path, None), key, child, by_a.get(value), by_b.get(value)))
                else:
                    _compare(by_a[value], by_b[value], child, key, out, same_version)
            if [item[identity] for item in a] != [item[identity] for item in b] and set(by_a) == set(by_b):
                out.append(Difference("ordering", key, path, [item[identity] for item in a],
                                      [item[identity] for item in b]))
            return
        for index in range(max(len(a), len(b))):
            child = f"{path}[{index}]"
            if index >= len(a) or index >= len(b):
                out.append(Difference(_kind(path, None), key, child, a[index] if index < len(a) else None,
                                      b[index] if index < len(b) else None))
            else:
                _compare(a[index], b[index], child, key, out, same_version)
        return
    if a != b:
        out.append(Difference(_kind(path, a, b), key, path, a, b))


def _kind(path: str, a, b=0) -> str:
    if "_unknown_tagged" in path:
        return "tagged"
    if ".records" in path:
        return "records"
    if path.startswith("problems"):
        return "problem"
    if a is None or b is None:
        return "absent"
    if path.rsplit(".", 1)[-1].endswith("error_code"):
        return "error_code"
    return "value"


def identity_field(a: list, b: list) -> str | None:
    """The field that names each element of two lists of structs, if every element has a unique one."""
    items = a + b
    if not items or not all(isinstance(item, dict) for item in items):
        return None
    for name in IDENTITY_FIELDS:
        named = all(name in item and isinstance(item[name], (str, int)) for item in items)
        if named and len({item[name] for item in a}) == len(a) and len({item[name] for item in b}) == len(b):
            return name
    return None


def _ordering(a: list[str], b: list[str]) -> list[Difference]:
    common = set(a) & set(b)
    order_a = [key for key in a if key in common]
    order_b = [key for key in b if key in common]
    if order_a == order_b:
        return []
    first = next(index for index, (left, right) in enumerate(zip(order_a, order_b)) if left != right)
    return [Difference("ordering", "", f"exchange {first + 1}", order_a[first:first + 3], order_b[first:first + 3])]


def _closes(a: list, b: list, kept_a: list[WireExchange], kept_b: list[WireExchange]) -> list[Difference]:
    """Connections the server ended, compared per connection (numbered by first compared exchange)."""
    ends_a, ends_b = _server_ends(a, kept_a), _server_ends(b, kept_b)
    differences = []
    for number in sorted(set(ends_a) | set(ends_b)):
        if ends_a.get(number) != ends_b.get(number):
            differences.append(Difference("close", "", f"connection {number}", ends_a.get(number), ends_b.get(number)))
    return differences


def _server_ends(timeline: list, kept: list[WireExchange]) -> dict[int, str]:
    """{connection number: how the server ended it}; the harness ends its own connections
    itself, so client closes carry no information."""
    numbers: dict[str, int] = {}
    for exchange in kept:
        numbers.setdefault(exchange.connection, len(numbers) + 1)
    return {numbers[item.connection]: f"closed by the server ({item.how})" for item in timeline
            if isinstance(item, ConnectionEvent) and item.by == "server" and item.connection in numbers}


def _summary(exchange: WireExchange) -> str:
    return f"{exchange.api} v{exchange.version} correlation {exchange.correlation_id}"


def _error(code) -> str:
    if isinstance(code, int):
        return f"{code} {error_name(code)}"
    return _short(code)


def _short(value, limit: int = 160) -> str:
    import json

    text = value if isinstance(value, str) else json.dumps(value, default=str, separators=(",", ":"))
    return text if len(text) <= limit else text[:limit] + "..."
