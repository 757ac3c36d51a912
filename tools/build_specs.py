#!/usr/bin/env python3
"""Regenerate conformance/protocol/specs/*.json from Apache Kafka's official message specs.

Kafka publishes its wire-protocol message specs as JSON-with-comments files
inside the kafka-clients jar (under common/message/).  This script reads the
specs the harness needs from such a jar (or from a directory holding the same
files), keeps their structure only -- every "about" text and every comment is
dropped -- and writes one normalised file per message, with a stable key order
and a top-level "x-source" naming where it came from.

Usage:
    python tools/build_specs.py                      # jar of the pinned release in ~/.m2
    python tools/build_specs.py --source PATH.jar    # any kafka-clients jar
    python tools/build_specs.py --source DIR --label "kafka 4.2.1 (directory)"
    python tools/build_specs.py --check              # exit 1 if the bundled files are stale

Fetch the pinned jar first with tools/fetch_oracles.sh.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import zipfile
from pathlib import Path
from typing import Any, Callable

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
from conformance.resources import UPSTREAM_KAFKA  # noqa: E402  (the pinned release, one constant)

KAFKA_VERSION = os.environ.get("KAFKA_VERSION", UPSTREAM_KAFKA)
JAR_PREFIX = "common/message/"
DEFAULT_OUT = REPO_ROOT / "conformance" / "protocol" / "specs"

APIS = [
    # transactions and what they need
    "ApiVersions", "Metadata", "CreateTopics", "DeleteTopics", "FindCoordinator",
    "InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "TxnOffsetCommit",
    "EndTxn", "WriteTxnMarkers", "Produce", "Fetch", "ListOffsets",
    "OffsetCommit", "OffsetFetch", "JoinGroup", "SyncGroup", "Heartbeat",
    "LeaveGroup", "DescribeTransactions", "ListTransactions", "DescribeProducers",
    # KIP-848 consumer groups: members join by heartbeat and carry a member epoch into TxnOffsetCommit
    "ConsumerGroupHeartbeat", "ConsumerGroupDescribe",
    # setup and authentication
    "DescribeGroups", "ListGroups", "DeleteRecords", "DescribeConfigs",
    "IncrementalAlterConfigs", "SaslHandshake", "SaslAuthenticate", "CreatePartitions", "CreateAcls",
    "DescribeAcls", "DeleteAcls",  # is there an authorizer; the harness removes the ACLs a case created
    # moving partition leadership on a cluster target (the move_leader fault)
    "AlterPartitionReassignments", "ListPartitionReassignments", "ElectLeaders",
]
HEADERS = ["RequestHeader", "ResponseHeader"]
MESSAGES = [f"{api}{kind}" for api in APIS for kind in ("Request", "Response")] + HEADERS

# Key order in the output; keys not listed follow in alphabetical order.
TOP_ORDER = [
    "x-source", "apiKey", "type", "listeners", "name", "validVersions",
    "flexibleVersions", "latestVersionUnstable", "fields", "commonStructs",
]
FIELD_ORDER = [
    "name", "type", "versions", "nullableVersions", "taggedVersions", "tag",
    "default", "mapKey", "entityType", "ignorable", "zeroCopy", "flexibleVersions",
    "fields",
]
PROSE_KEYS = {"about"}
INDENT = "  "


def strip_comments(text: str) -> str:
    """Drop // and /* */ comments that are not inside a JSON string."""
    out: list[str] = []
    i, n = 0, len(text)
    quoted = False
    while i < n:
        ch = text[i]
        if quoted:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            quoted = ch != '"'
            i += 1
            continue
        if ch == '"':
            quoted = True
            out.append(ch)
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise ValueError("unterminated /* comment")
            i = end + 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _ordered(d: dict[str, Any], order: list[str]) -> dict[str, Any]:
    keys = [k for k in order if k in d] + sorted(k for k in d if k not in order)
    return {k: d[k] for k in keys}


def clean_field(field: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in field.items() if k not in PROSE_KEYS}
    if "fields" in out:
        out["fields"] = [clean_field(f) for f in out["fields"]]
    return _ordered(out, FIELD_ORDER)


def clean_spec(spec: dict[str, Any], source_label: str) -> dict[str, Any]:
    out: dict[str, Any] = {"x-source": source_label}
    for k, v in spec.items():
        if k in PROSE_KEYS or k.startswith("x-"):
            continue
        if k == "fields":
            v = [clean_field(f) for f in v]
        elif k == "commonStructs":
            v = [clean_field(s) for s in v]
        out[k] = v
    return _ordered(out, TOP_ORDER)


def _scalar(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False)


def _emit_struct(d: dict[str, Any], depth: int) -> str:
    """One field (or common struct) per line; nested fields on following lines."""
    inline = [f"{_scalar(k)}: {_scalar(v)}" for k, v in d.items() if k != "fields"]
    if "fields" not in d:
        return "{" + ", ".join(inline) + "}"
    head = "{" + ", ".join(inline + ['"fields": ['])
    return head + _emit_list(d["fields"], depth + 1) + "]}"


def _emit_list(items: list[dict[str, Any]], depth: int) -> str:
    if not items:
        return ""
    pad = INDENT * depth
    body = ",\n".join(pad + _emit_struct(x, depth) for x in items)
    return "\n" + body + "\n" + INDENT * (depth - 1)


def render(spec: dict[str, Any]) -> str:
    lines = []
    for k, v in spec.items():
        if k in ("fields", "commonStructs"):
            lines.append(f"{INDENT}{_scalar(k)}: [{_emit_list(v, 2)}]")
        else:
            lines.append(f"{INDENT}{_scalar(k)}: {_scalar(v)}")
    text = "{\n" + ",\n".join(lines) + "\n}\n"
    if json.loads(text) != spec:  # the emitter must not change meaning
        raise AssertionError(f"rendering changed {spec.get('name')}")
    return text


def _has_prose(node: Any) -> bool:
    if isinstance(node, dict):
        return any(k in PROSE_KEYS for k in node) or any(_has_prose(v) for v in node.values())
    if isinstance(node, list):
        return any(_has_prose(v) for v in node)
    return False


def open_source(source: Path) -> tuple[Callable[[str], str | None], str]:
    """(reader of a message's raw text by name, default provenance label)."""
    if source.is_dir():
        def read_dir(name: str) -> str | None:
            p = source / f"{name}.json"
            return p.read_text(encoding="utf-8") if p.is_file() else None
        return read_dir, f"directory {source.name}"
    zf = zipfile.ZipFile(source)
    names = set(zf.namelist())
    label = source.stem
    props = "kafka/kafka-version.properties"
    if props in names:
        kv = dict(
            line.split("=", 1)
            for line in zf.read(props).decode().splitlines()
            if "=" in line
        )
        if "version" in kv:
            label = f"kafka-clients {kv['version'].strip()}"

    def read_jar(name: str) -> str | None:
        entry = f"{JAR_PREFIX}{name}.json"
        return zf.read(entry).decode("utf-8") if entry in names else None

    return read_jar, label


def default_jar() -> Path:
    repo = os.environ.get("MAVEN_REPO_LOCAL") or str(Path.home() / ".m2" / "repository")
    return (
        Path(repo) / "org" / "apache" / "kafka" / "kafka-clients" / KAFKA_VERSION
        / f"kafka-clients-{KAFKA_VERSION}.jar"
    )


def build(source: Path, label: str | None) -> dict[str, str]:
    read, default_label = open_source(source)
    label = label or default_label
    rendered: dict[str, str] = {}
    missing = []
    for name in MESSAGES:
        raw = read(name)
        if raw is None:
            missing.append(name)
            continue
        spec = json.loads(strip_comments(raw))
        if spec.get("name") != name:
            raise SystemExit(f"{name}.json declares name {spec.get('name')!r}")
        cleaned = clean_spec(spec, label)
        if _has_prose(cleaned):
            raise AssertionError(f"{name}: prose survived cleaning")
        rendered[f"{name}.json"] = render(cleaned)
    if missing:
        raise SystemExit(f"source {source} lacks: {', '.join(missing)}")
    return rendered


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", type=Path, default=None,
                    help=f"kafka-clients jar or directory of *.json specs "
                         f"(default: kafka-clients {KAFKA_VERSION} in the local Maven repo)")
    ap.add_argument("--label", default=None,
                    help='provenance written to "x-source" (default: from the jar)')
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 if any output file would change")
    ap.add_argument("--prune", action="store_true",
                    help="delete *.json in --out that are not generated")
    args = ap.parse_args(argv)

    source = args.source or default_jar()
    if not source.exists():
        print(f"{source} not found; run tools/fetch_oracles.sh first", file=sys.stderr)
        return 2
    rendered = build(source, args.label)

    stale = []
    for fname, text in rendered.items():
        path = args.out / fname
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            stale.append(fname)
    extra = sorted(p.name for p in args.out.glob("*.json") if p.name not in rendered)

    if args.check:
        for fname in stale:
            print(f"stale: {fname}", file=sys.stderr)
        for fname in extra:
            print(f"not generated: {fname}", file=sys.stderr)
        return 1 if stale else 0

    args.out.mkdir(parents=True, exist_ok=True)
    for fname in stale:
        (args.out / fname).write_text(rendered[fname], encoding="utf-8")
    if args.prune:
        for fname in extra:
            (args.out / fname).unlink()
    elif extra:
        print(f"left alone (not generated): {', '.join(extra)}", file=sys.stderr)
    print(f"{len(rendered)} specs from {source}: {len(stale)} written, "
          f"{len(rendered) - len(stale)} unchanged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
