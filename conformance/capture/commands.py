"""What ``conformance decode`` and ``conformance diff`` do, as functions: they print, and return the exit code.

Their options are parsed in ``conformance.cli.decode`` and ``conformance.cli.diff``; nothing here
knows of a command line. Exit codes follow diff(1): 0 same (or decoded), 1 different, 2 trouble
(unreadable input).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..client.transcript import jsonable
from ..protocol.errors import error_name
from .wire import ConnectionEvent, WireExchange

TROUBLE = 2


# ---------------------------------------------------------------------------------- decode
def decode(file: Path, ports: list[int] | None = None, *, as_json: bool = False, with_bytes: bool = False,
           verbose: bool = False) -> int:
    """Print the Kafka exchanges of a capture, one line each (``verbose``: with their bodies), or one
    JSON document (``with_bytes``: the frames too, in base64); ``ports``: the servers carrying Kafka."""
    from .pcap import CaptureFileError, read_capture

    try:
        capture = read_capture(file, ports)
    except (OSError, CaptureFileError) as error:
        print(f"conformance decode: {error}", file=sys.stderr)
        return TROUBLE
    if as_json:
        document = {"file": str(file), "packets": capture.packets, "frames": capture.frames,
                    "exchanges": [exchange.to_json(with_bytes=with_bytes) for exchange in capture.exchanges],
                    "events": [event.to_json() for event in capture.events], "notes": capture.notes}
        print(json.dumps(document, indent=1, default=str))
        return 0
    timeline = capture.timeline()
    origin = next((moment for item in timeline if (moment := _moment(item))), 0.0)
    for item in timeline:
        print(_line(item, origin))
        if verbose and isinstance(item, WireExchange):
            print(f"    request:  {_compact(item.request)}")
            if item.response is not None:
                print(f"    response: {_compact(item.response)}")
    for note in capture.notes:
        print(f"note: {note}")
    print(f"{len(capture.exchanges)} exchanges, {capture.frames} frames, {len(capture.events)} closes "
          f"in {capture.packets} packets")
    return 0


def _moment(item) -> float | None:
    return (item.sent_at or item.received_at) if isinstance(item, WireExchange) else item.at


def _line(item, origin: float) -> str:
    offset = ((_moment(item) or origin) - origin) * 1000
    if isinstance(item, ConnectionEvent):
        return f"#{item.packet or '-':<6} +{offset:9.1f} ms {item.connection} closed by the {item.by} ({item.how})"
    packet = item.request_packet or item.response_packet or "-"
    if item.response_bytes is None:
        outcome = "no response"
    elif item.response is None:
        outcome = "undecoded response"
    else:
        failed = sorted({code for code in _error_codes(item.response) if code})
        outcome = f"{item.elapsed_ms} ms " + (", ".join(error_name(code) for code in failed) if failed else "ok")
    problems = f"  ! {'; '.join(item.problems)}" if item.problems else ""
    return (f"#{packet:<6} +{offset:9.1f} ms {item.connection} {item.api} v{item.version} "
            f"corr={item.correlation_id} -> {outcome}{problems}")


def _error_codes(message) -> list[int]:
    found = []
    stack = [message]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                if key.endswith("error_code") and isinstance(item, int):
                    found.append(item)
                elif isinstance(item, (dict, list)):
                    stack.append(item)
        elif isinstance(value, list):
            stack.extend(value)
    return found


def _compact(value, limit: int = 2000) -> str:
    text = json.dumps(jsonable(value), separators=(",", ":"), default=str)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


# ---------------------------------------------------------------------------------- diff
def diff(a: Path, b: Path, *, as_json: bool = False, html: Path | None = None, rules: Path | None = None,
         ports: list[int] | None = None, a_target: str | None = None, b_target: str | None = None,
         limit: int = 20) -> int:
    """Print the exchange-by-exchange diff of two runs (captures or results files) as text (``limit``
    differences per case) or JSON, or write it as an HTML page; 0 when they are the same, 1 when not."""
    from .diff import diff_runs
    from .html_report import render_html
    from .loaders import load_run
    from .normalise import Rules
    from .pcap import CaptureFileError
    from .render import render_json, render_text, summary

    try:
        normalisation = Rules.load(rules) if rules else Rules()
        run_a = load_run(a, ports=ports, target=a_target)
        run_b = load_run(b, ports=ports, target=b_target)
    except (OSError, ValueError, CaptureFileError) as error:
        print(f"conformance diff: {error}", file=sys.stderr)
        return TROUBLE
    result = diff_runs(run_a.groups, run_b.groups, normalisation, a_name=_name(a, a_target),
                       b_name=_name(b, b_target), a_outcomes=run_a.outcomes, b_outcomes=run_b.outcomes)
    if as_json:
        print(render_json(result))
    elif html:
        html.parent.mkdir(parents=True, exist_ok=True)
        html.write_text(render_html(result), encoding="utf-8")
        print(f"{summary(result)}\nwrote {html}")
    else:
        print(render_text(result, limit=limit))
    return 0 if result.same else 1


def _name(path: Path, target: str | None) -> str:
    return f"{path} (target {target})" if target else str(path)
