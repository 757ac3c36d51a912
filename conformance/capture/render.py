"""Diffs for people (text on a terminal) and for tools (JSON)."""

from __future__ import annotations

import json
from collections import Counter

from .diff import Diff, RunDiff


def render_text(result: RunDiff, *, limit: int = 20) -> str:
    """One block per case that differs, at most ``limit`` differences each, then a summary.

    A difference found identically in at least half the cases (and three), such as every case's
    ApiVersions answer, is the targets' nature rather than the case's: it is printed once, up
    front, instead of in each case.
    """
    common = common_differences(result)
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
        own = by_weight([difference for difference in case.differences if identity(difference) not in common])
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


# What a reader should see first: verdicts and error codes before shape, shape before noise.
KIND_ORDER = ["outcome", "error_code", "records", "tagged", "close", "problem", "absent", "value", "ordering",
              "only_in_a", "only_in_b", "version"]


def by_weight(differences: list) -> list:
    """Differences, most telling kinds first (stable within a kind)."""
    rank = {kind: index for index, kind in enumerate(KIND_ORDER)}
    return sorted(differences, key=lambda difference: rank.get(difference.kind, len(rank)))


def _where(difference) -> str:
    return f"{difference.key}  " if difference.key else ""


def identity(difference) -> tuple:
    """What makes two cases' differences the same difference."""
    return (difference.kind, difference.key, difference.path, json.dumps(difference.a, default=str),
            json.dumps(difference.b, default=str))


def common_differences(result: RunDiff) -> dict[tuple, tuple]:
    """{identity: (difference, cases)} for differences in at least half the compared cases (and 3)."""
    compared = sum(1 for case in result.cases if any(pair.a and pair.b for pair in case.pairs))
    threshold = max(3, (compared + 1) // 2)
    counts: Counter = Counter()
    first: dict[tuple, object] = {}
    for case in result.cases:
        # Case-level differences (outcome, a side with no exchanges) always stay with their case.
        for key, difference in {identity(difference): difference for difference in case.differences
                                if difference.key}.items():
            counts[key] += 1
            first.setdefault(key, difference)
    return {key: (first[key], count) for key, count in counts.most_common() if count >= threshold}


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
