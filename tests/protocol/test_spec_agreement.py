"""The bundled message specs agree with independent copies of Kafka's specs.

Oracles:
  kafka-clients  the kafka-clients jar of the pinned release in the local Maven
                 repository (tools/fetch_oracles.sh puts it there); must match
                 exactly, apart from prose and x- keys.
  kafka-python   the specs shipped in the kafka-python 3.0.12 wheel; compared on
                 the versions both sides define.
  kafka-4.2.1    Kafka 4.2.1's specs in shared/reference beside the repository;
                 compared on 4.2.1's versions, which the pinned release must keep.

Differences known to be legitimate are listed in ALLOWANCES with their reason.
Run this file directly for a report of every difference, allowed or not.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field

import pytest

from spec_oracles import (
    REFERENCE_421,
    DirOracle,
    JarOracle,
    Range,
    Spec,
    bundled_spec_files,
    diff_views,
    kafka_clients_jar,
    kafka_python_resources,
    load_path,
    loads,
    strip_comments,
)

JAR = "kafka-clients"
KPY = "kafka-python"
REF = "kafka-4.2.1"


@dataclass(frozen=True)
class Allowance:
    spec: str
    oracles: frozenset[str]
    reason: str
    path: str = ""  # field path in our spec
    attr: str = ""  # FieldAt attribute (spec_oracles) that may differ at that path
    renamed_from: str = ""  # or: their path for a field we call `path`


_OLDER = frozenset({KPY, REF})  # both trail 4.4.0 by the same changes

ALLOWANCES = [
    Allowance(
        "TxnOffsetCommitRequest", _OLDER, path="GenerationIdOrMemberEpoch",
        renamed_from="GenerationId",
        reason="4.4.0 renamed GenerationId (int32, v3+) to GenerationIdOrMemberEpoch; "
               "same type, versions, default and position, so the encoding is unchanged",
    ),
    Allowance(
        "TxnOffsetCommitRequest", _OLDER, path="Topics.Name", attr="ignorable",
        reason="TxnOffsetCommit v6 (new in 4.4.0) identifies topics by TopicId, so Name "
               "became v0-5 and ignorable; ignorable only governs writing a version that "
               "lacks the field, so v0-5 encode the same",
    ),
    Allowance(
        "TxnOffsetCommitResponse", _OLDER, path="Topics.Name", attr="ignorable",
        reason="as for the request: Name became v0-5 and ignorable when v6 added TopicId",
    ),
    Allowance(
        "DescribeProducersRequest", _OLDER, path="Topics.Name", attr="map_key",
        reason="4.4.0 marks Topics.Name as the collection's map key; mapKey shapes the "
               "generated Java collection only, not the bytes on the wire",
    ),
]


def _allowances(oracle: str, spec: str) -> list[Allowance]:
    return [a for a in ALLOWANCES if a.spec == spec and oracle in a.oracles]


# --------------------------------------------------------------------------
# Bundled specs and the oracles


SPEC_FILES = bundled_spec_files()
SPEC_IDS = [p.stem for p in SPEC_FILES]


@functools.cache
def bundled(name: str) -> Spec:
    return load_path(next(p for p in SPEC_FILES if p.stem == name))


def pinned_version() -> str | None:
    sources = {bundled(n).data.get("x-source") for n in SPEC_IDS}
    if len(sources) != 1:
        return None
    (src,) = sources
    prefix = "kafka-clients "
    return src[len(prefix):] if isinstance(src, str) and src.startswith(prefix) else None


@functools.cache
def oracle(which: str):
    """(oracle, description) or (None, reason to skip)."""
    if which == JAR:
        version = pinned_version()
        if version is None:
            return None, "bundled specs do not name one kafka-clients release in x-source"
        jar = kafka_clients_jar(version)
        if not jar.is_file():
            return None, f"{jar} absent; run tools/fetch_oracles.sh"
        o = JarOracle(jar)
        if not o.names:
            return None, f"{jar.name} holds no common/message/*.json specs"
        return o, f"kafka-clients {version} jar"
    if which == KPY:
        d, why = kafka_python_resources()
        return (DirOracle(d), why) if d else (None, why)
    if which == REF:
        if not REFERENCE_421.is_dir():
            return None, f"{REFERENCE_421} absent"
        return DirOracle(REFERENCE_421), "Kafka 4.2.1 reference specs"
    raise ValueError(which)


def _structure(node):
    """The spec without prose or x- keys, for exact comparison."""
    if isinstance(node, dict):
        return {
            k: _structure(v) for k, v in node.items()
            if k != "about" and not k.startswith("x-")
        }
    if isinstance(node, list):
        return [_structure(v) for v in node]
    return node


@dataclass
class Outcome:
    skipped: str = ""  # reason, when there was nothing to compare
    problems: list[str] = field(default_factory=list)
    allowed: list[str] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)
    used: set = field(default_factory=set)


@functools.cache
def compare(which: str, name: str) -> Outcome:
    o, why = oracle(which)
    if o is None:
        return Outcome(skipped=why)
    ours = bundled(name)
    theirs = o.get(name)
    if theirs is None:
        if which == JAR:
            return Outcome(problems=[f"{why} has no {name}.json"])
        return Outcome(skipped=f"{why} has no {name}.json")

    out = Outcome()
    mine, other = ours.meta(), theirs.meta()
    ours_v, theirs_v = set(ours.valid_versions()), set(theirs.valid_versions())

    if which == JAR:
        # Exact: same versions, same top-level facts, same structure.
        out.versions = sorted(ours_v | theirs_v)
        for key in ("validVersions", "flexibleVersions"):
            a, b = ours.data.get(key), theirs.data.get(key)
            if a != b:
                out.problems.append(f"{key}: ours={a!r} theirs={b!r}")
        for key in mine:
            if mine[key] != other[key]:
                out.problems.append(f"{key}: ours={mine[key]!r} theirs={other[key]!r}")
        out.problems += diff_views(ours, theirs, sorted(ours_v & theirs_v))
        if not out.problems and _structure(ours.data) != _structure(theirs.data):
            out.problems.append("structure differs (key spelling or placement)")
        return out

    # Older oracles: compare where both define the message.
    shared = sorted(ours_v & theirs_v)
    out.versions = shared
    for key in ("apiKey", "type", "name", "listeners", "extra"):
        if mine[key] != other[key]:
            out.problems.append(f"{key}: ours={mine[key]!r} theirs={other[key]!r}")
    missing_structs = set(other["commonStructs"]) - set(mine["commonStructs"])
    if missing_structs:
        out.problems.append(f"commonStructs only theirs: {sorted(missing_structs)}")
    if which == REF:
        dropped = sorted(theirs_v - ours_v)
        if dropped:
            out.problems.append(f"versions {dropped} of 4.2.1 are gone in ours")
    elif theirs_v != ours_v:
        out.allowed.append(
            f"validVersions ours={ours.data['validVersions']} "
            f"theirs={theirs.data['validVersions']}; compared on {_span(shared)}"
        )

    allow = _allowances(which, name)
    renames = {a.renamed_from: a.path for a in allow if a.renamed_from}
    ignored = {(a.path, a.attr) for a in allow if a.attr}
    out.problems += diff_views(ours, theirs, shared, renames, ignored, out.used)
    for a in allow:
        key = ("rename", a.renamed_from) if a.renamed_from else (a.path, a.attr)
        if key in out.used:
            out.allowed.append(f"{a.path} {a.attr or 'renamed from ' + a.renamed_from}: {a.reason}")
    return out


def _span(vs: list[int]) -> str:
    return f"v{vs[0]}-{vs[-1]}" if vs else "no common version"


def _check(which: str, name: str) -> None:
    out = compare(which, name)
    if out.skipped:
        pytest.skip(out.skipped)
    if out.problems:
        pytest.fail(
            f"{name} disagrees with {oracle(which)[1]}:\n  " + "\n  ".join(out.problems),
            pytrace=False,
        )


# --------------------------------------------------------------------------
# Tests


def test_specs_are_bundled():
    assert SPEC_FILES, "conformance/protocol/specs holds no *.json; run tools/build_specs.py"


@pytest.mark.parametrize("name", SPEC_IDS)
def test_bundled_spec_is_clean(name):
    spec = bundled(name)
    assert spec.name == name
    assert spec.data.get("x-source"), "x-source (provenance) missing"
    text = SPEC_FILES[SPEC_IDS.index(name)].read_text(encoding="utf-8")
    assert json.loads(text) == spec.data, "bundled specs must be plain JSON, no comments"
    assert _structure(spec.data) == {k: v for k, v in spec.data.items() if not k.startswith("x-")}, (
        "bundled specs must carry no prose (about)"
    )


@pytest.mark.parametrize("name", SPEC_IDS)
def test_agrees_with_kafka_clients_jar(name):
    _check(JAR, name)


@pytest.mark.parametrize("name", SPEC_IDS)
def test_agrees_with_kafka_python(name):
    _check(KPY, name)


@pytest.mark.parametrize("name", SPEC_IDS)
def test_agrees_with_kafka_421(name):
    _check(REF, name)


@pytest.mark.parametrize(
    "allowance", ALLOWANCES, ids=lambda a: f"{a.spec}-{a.path}-{a.attr or 'rename'}"
)
def test_allowance_is_still_needed(allowance):
    """An allowance no oracle needs any more must be removed."""
    checked = False
    for which in sorted(allowance.oracles):
        out = compare(which, allowance.spec)
        if out.skipped:
            continue
        checked = True
        key = (
            ("rename", allowance.renamed_from) if allowance.renamed_from
            else (allowance.path, allowance.attr)
        )
        assert key in out.used, f"{which} no longer differs here; drop the allowance"
    if not checked:
        pytest.skip("none of its oracles is available")


# Normaliser self-checks: the per-version view must see through re-spellings.

def _spec(fields, valid="0-3", flexible="2+", common=None):
    d = {"name": "T", "type": "request", "apiKey": 0, "validVersions": valid,
         "flexibleVersions": flexible, "fields": fields}
    if common is not None:
        d["commonStructs"] = common
    return Spec(d, "inline")


def test_normaliser_respellings_compare_equal():
    a = _spec([{"name": "A", "type": "int32", "versions": "0+", "default": "-1"},
               {"name": "B", "type": "string", "versions": "1+", "nullableVersions": "2+"}])
    b = _spec([{"name": "A", "type": "int32", "versions": "0-3", "default": -1},
               {"name": "B", "type": "string", "versions": "1-3", "nullableVersions": "2-3"}],
              flexible="2-3")
    assert diff_views(a, b, [0, 1, 2, 3]) == []


def test_normaliser_inlines_common_structs():
    inline = _spec([{"name": "Xs", "type": "[]X", "versions": "0+", "fields": [
        {"name": "Id", "type": "int32", "versions": "0+"}]}])
    shared = _spec([{"name": "Xs", "type": "[]X", "versions": "0+"}],
                   common=[{"name": "X", "versions": "0+", "fields": [
                       {"name": "Id", "type": "int32", "versions": "0+"}]}])
    assert diff_views(inline, shared, [0, 1, 2, 3]) == []


def test_normaliser_sees_real_differences():
    a = _spec([{"name": "A", "type": "int32", "versions": "0+"},
               {"name": "T", "type": "int8", "versions": "2+", "taggedVersions": "2+", "tag": 0}])
    b = _spec([{"name": "A", "type": "int32", "versions": "1+", "nullableVersions": "3+"},
               {"name": "T", "type": "int8", "versions": "2+", "taggedVersions": "2+", "tag": 1}],
              flexible="3+")
    problems = diff_views(a, b, [0, 1, 2, 3])
    assert any("v0: only ours: A" in p for p in problems)
    assert any("v2: flexible" in p for p in problems)
    assert any("T: tag ours=0 theirs=1" in p for p in problems)
    assert any("v3: A: nullable" in p for p in problems)


def test_comment_stripping_keeps_strings():
    text = '{\n // note\n "a": "x // not a comment", /* block */ "b": "\\"//\\""\n}'
    assert loads(text) == {"a": "x // not a comment", "b": '"//"'}
    assert "note" not in strip_comments(text)
    assert Range.parse("none").lo is None and 5 in Range.parse("3+")


# --------------------------------------------------------------------------


def report() -> None:
    for which in (JAR, KPY, REF):
        o, why = oracle(which)
        print(f"== {which}: {why}")
        counts = {"compared": 0, "skipped": 0, "with problems": 0}
        for name in SPEC_IDS:
            out = compare(which, name)
            if out.skipped:
                counts["skipped"] += 1
                print(f"  {name}: skipped: {out.skipped}")
                continue
            counts["compared"] += 1
            if out.problems:
                counts["with problems"] += 1
            for line in out.problems:
                print(f"  {name}: PROBLEM {line}")
            for line in out.allowed:
                print(f"  {name}: allowed {line}")
        print("  " + ", ".join(f"{v} {k}" for k, v in counts.items()))


if __name__ == "__main__":
    report()
