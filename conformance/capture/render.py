"""Diffs for people (text on a terminal) and for tools (JSON)."""

from __future__ import annotations

import json
from collections import Counter

from .diff import Diff, RunDiff


def render_text(result: RunDiff, *, limit: int = 20, common_at: int = 3) -> str:
    """One block per case that differs, at most ``limit`` differences each, then a summary.

    A difference found identically in ``common_at`` cases or more (every case's ApiVersions
    answer, say) is printed once, up front, instead of in each case.
    """
    common = _common(result, common_at)
    lines = [f"A: {result.a_name}", f"B: {result.b_name}", ""]
    if common:
        lines.append(f"== common to several cases: {_count(len(common), 'difference')}")
        for (difference, cases) in list(common.values())[:limit * 2]:
            lines.append(f"   [{difference.kind}] in {cases} cases: {_where(difference)}{difference.describe()}")
        if len(common) > limit * 2:
            lines.append(f"   ... {len(common) - limit * 2} more")
    for case in result.cases:
        if case.same:
            continue
        own = [difference for difference in case.differences if _identity(difference) not in common]
        shared = len(case.differences) - len(own)
        lines.append(f"== {case.label}: {_count(len(own), 'difference')}"
                     + (f" (and {shared} common)" if shared else ""))
        for difference in own[:limit]:
            lines.append(f"   [{difference.kind}] {_where(difference)}{difference.describe()}")
        if len(own) > limit:
            lines.append(f"   ... {len(own) - limit} more")
    for side, keys in (("A", result.only_in_a), ("B", result.only_in_b)):
        if keys:
            lines.append(f"== only in {side}: {_count(len(keys), 'case')}")
            lines.extend(f"   {key}" for key in keys[:limit])
            if len(keys) > limit:
                lines.append(f"   ... {len(keys) - limit} more")
    lines.append("")
    lines.append(summary(result))
    return "\n".join(lines)


def _where(difference) -> str:
    return f"{difference.key}  " if difference.key else ""


def _identity(difference) -> tuple:
    return (difference.kind, difference.key, difference.path, json.dumps(difference.a, default=str),
            json.dumps(difference.b, default=str))


def _common(result: RunDiff, threshold: int) -> dict[tuple, tuple]:
    counts: Counter = Counter()
    first = {}
    for case in result.cases:
        for identity in {_identity(difference): difference for difference in case.differences}.items():
            counts[identity[0]] += 1
            first.setdefault(identity[0], identity[1])
    return {identity: (first[identity], count) for identity, count in counts.most_common() if count >= threshold}


def summary(result: RunDiff) -> str:
    differing = [case for case in result.cases if not case.same]
    kinds = Counter(difference.kind for case in result.cases for difference in case.differences)
    text = (f"{len(result.cases)} compared, {len(differing)} differ, "
            f"{_count(sum(kinds.values()), 'difference')}")
    if kinds:
        text += " (" + ", ".join(f"{kind} {count}" for kind, count in kinds.most_common()) + ")"
    if result.only_in_a or result.only_in_b:
        text += f"; {len(result.only_in_a)} only in A, {len(result.only_in_b)} only in B"
    return text


def render_json(result: RunDiff) -> str:
    return json.dumps(result.to_json(), indent=2, default=str)


def single(diff: Diff, a_name: str, b_name: str) -> RunDiff:
    """Wrap one case's diff so every renderer takes the same input."""
    return RunDiff(a_name, b_name, cases=[diff])


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")
