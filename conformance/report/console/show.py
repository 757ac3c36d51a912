"""``conformance show ITEM``: one item's whole record from a results file, every exchange included.

The console of ``conformance run`` lists each departing case in a few lines; this is where the rest
is. ITEM is the item's id ``suite::case@vN`` (what reports and their reproduce commands print), the pytest
node id (``suites/kip98/x.yaml::case[target-vN]``), or a substring of either that names one item. A file holding several runs
answers with each item's latest record (``--run-id`` picks a run). The command's options are parsed
in ``conformance.cli.show``; this module finds and renders.
"""

from __future__ import annotations

import json
from pathlib import Path

from ...results.ids import named_target
from ...results.record import OUTCOME_LABELS, Outcome, ResultRecord
from ..itemref import label, latest, reproduce

LISTED = 20  # an ambiguous ITEM lists this many of the items it names


# ------------------------------------------------------------------------------ finding
def find(records: list[ResultRecord], item: str) -> list[ResultRecord]:
    """The latest record of each item ``item`` names: by node id, then by label, then by substring."""
    items = list(latest(records).values())
    item = item.strip()
    for matches in (lambda record: _same_nodeid(record, item),
                    lambda record: label(record) == item,
                    lambda record: item in str(record.nodeid or "") or item in label(record)):
        found = [record for record in items if matches(record)]
        if found:
            return found
    return []


def _same_nodeid(record: ResultRecord, item: str) -> bool:
    """``path::name`` equals the record's node id, its path given from here or relative to the rootdir."""
    nodeid = str(record.nodeid or "")
    if "::" not in item or "::" not in nodeid:
        return False
    path, name = item.split("::", 1)
    recorded_path, recorded_name = nodeid.split("::", 1)
    if name != recorded_name:
        return False
    if path == recorded_path:
        return True
    suite_file = record.path
    try:
        return bool(suite_file) and Path(path).resolve() == Path(suite_file).resolve()
    except OSError:
        return False


def not_one(item: str, found: list[ResultRecord], path: Path) -> str:
    if not found:
        return (f"conformance show: no item in {path} matches {item!r} (give suites/FILE.yaml::case[target-vN], "
                "suite::case@vN or a part of one)")
    lines = [f"conformance show: {item!r} names {len(found)} items in {path}; give one of:"]
    lines += [f"  {record.nodeid or label(record)}  ({label(record)}, {record.target}: {record.outcome})"
              for record in found[:LISTED]]
    if len(found) > LISTED:
        lines.append(f"  ... and {len(found) - LISTED} more")
    return "\n".join(lines)


# ------------------------------------------------------------------------------ rendering
def render(record: ResultRecord) -> str:
    """The record as ``conformance show`` prints it: its fields, then every exchange in full."""
    outcome = record.outcome or "?"
    target = named_target(str(record.target), record.target_version, record.target_name) or (
        str(record.target) + (f" ({record.target_version})" if record.target_version else ""))
    api = record.api
    version = "" if record.api_version is None else f" v{record.api_version}"
    duration = "?" if record.duration_s is None else record.duration_s  # a line that did not record it
    lines = [
        f"{label(record)}  [{target}]",
        _field("outcome", f"{OUTCOME_LABELS.get(outcome, outcome)} ({record.requirement or '?'}"
                          + (f", pytest: {record.verdict}" if record.verdict else "") + ")"),
        _field("title", record.title or ""),
        _field("cites", record.cites or ""),
        _field("api", f"{api}{version}" if api else "none (a case about no single API)"),
        _field("run", f"{record.run_id} at {record.recorded_at or '?'}, {duration} s"),
    ]
    if record.step_label:
        detail = ", ".join(str(part) for part in (record.step_role, record.step_api) if part)
        lines.append(_field("step", record.step_label + (f" ({detail})" if detail else "")))
    if record.expected is not None or record.actual is not None:
        lines += [_field("expected", _pretty(record.expected)), _field("actual", _pretty(record.actual))]
    if record.message:
        lines.append(_field("message", str(record.message).rstrip()))
    for name, artifact in (record.artifacts or {}).items():
        lines.append(_field(name, artifact))
    lines.append(_field("reproduce", reproduce(record)))
    transcript = list(record.transcript or [])
    if transcript:
        lines += ["", f"transcript ({len(transcript)} exchange{'' if len(transcript) == 1 else 's'}):",
                  *render_exchanges(transcript)]
    else:
        lines += ["", no_transcript(record)]
    return "\n".join(lines) + "\n"


def no_transcript(record: ResultRecord) -> str:
    """Why the record holds no exchanges, and the command that reruns the item keeping them."""
    outcome = record.outcome
    if outcome in OUTCOME_LABELS and Outcome(outcome).uneventful:
        why = (f"this item {OUTCOME_LABELS.get(outcome, outcome)}, and a run keeps the exchanges of items that do "
               "not pass only")
    elif str(record.message or "").startswith("not run"):
        why = "the item never ran"
    else:
        why = "the run kept none (--transcripts none)"
    return (f"no transcript in the results: {why}. To see them, rerun it keeping every transcript:\n"
            f"  {reproduce(record)} --transcripts all")


def render_exchanges(exchanges: list[dict]) -> list[str]:
    """Every exchange with its request and response in full (the console of a run shows none)."""
    lines: list[str] = []
    origin = next((exchange.get("sent_at") for exchange in exchanges
                   if isinstance(exchange, dict) and isinstance(exchange.get("sent_at"), (int, float))), None)
    for number, exchange in enumerate(exchanges, 1):
        if not isinstance(exchange, dict):
            lines.append(f"#{number} {exchange!r}")
            continue
        sent = exchange.get("sent_at")
        offset = f"+{(sent - origin) * 1000:8.1f} ms " if isinstance(sent, (int, float)) and origin else ""
        status = exchange.get("problem") or (f"{exchange['elapsed_ms']} ms" if exchange.get("elapsed_ms") is not None
                                             else "")
        step = f" [{exchange['step']}]" if exchange.get("step") else ""
        api = exchange.get("api") or (exchange.get("request") if isinstance(exchange.get("request"), str) else None)
        head = " ".join(str(part) for part in (exchange.get("connection"), api,
                                               None if exchange.get("version") is None else f"v{exchange['version']}",
                                               None if exchange.get("correlation_id") is None
                                               else f"corr={exchange['correlation_id']}") if part)
        lines.append(f"#{number} {offset}{head}{step}" + (f" -> {status}" if status else ""))
        for name in ("request", "response"):
            if isinstance(exchange.get(name), (dict, list)):
                lines.append(f"    {name + ':':<9} {json.dumps(exchange[name], separators=(',', ':'))}")
        if exchange.get("diagnosis"):
            lines.append(f"    problem:  {exchange['diagnosis']}")
        if exchange.get("trailing_bytes"):
            lines.append(f"    trailing: {exchange['trailing_bytes']} bytes after the response body")
    return lines


def _field(name: str, value) -> str:
    text = str(value).replace("\n", "\n" + " " * 12)
    return f"{name + ':':<11} {text}"


def _pretty(value) -> str:
    if isinstance(value, str):
        return value
    text = json.dumps(value, default=str)
    return json.dumps(value, indent=1, default=str) if len(text) > 100 else text

