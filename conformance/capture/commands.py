"""``conformance decode`` and ``conformance diff``: capture and results files on the command line.

Exit codes follow diff(1): 0 same (or decoded), 1 different, 2 trouble (unreadable input).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..client.transcript import jsonable
from ..protocol.errors import error_name
from .wire import ConnectionEvent, WireExchange

TROUBLE = 2


# ---------------------------------------------------------------------------------- decode
def decode_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="conformance decode",
                                     description="Kafka exchanges in a pcap or pcapng file, one line each.")
    parser.add_argument("file", type=Path, metavar="FILE", help="a pcap or pcapng capture")
    parser.add_argument("--port", type=int, action="append", metavar="N",
                        help="a server port carrying Kafka (repeatable; default: recognise Kafka connections)")
    parser.add_argument("--json", action="store_true", help="one JSON document for tools")
    parser.add_argument("--bytes", action="store_true", help="with --json: the frames too, in base64")
    parser.add_argument("--verbose", "-v", action="store_true", help="decoded request and response bodies too")
    return parser


def decode_main(argv: list[str] | None = None) -> int:
    from .pcap import CaptureFileError, read_capture

    arguments = decode_parser().parse_args(argv)
    try:
        capture = read_capture(arguments.file, arguments.port)
    except (OSError, CaptureFileError) as error:
        print(f"conformance decode: {error}", file=sys.stderr)
        return TROUBLE
    if arguments.json:
        document = {"file": str(arguments.file), "packets": capture.packets, "frames": capture.frames,
                    "exchanges": [exchange.to_json(with_bytes=arguments.bytes) for exchange in capture.exchanges],
                    "events": [event.to_json() for event in capture.events], "notes": capture.notes}
        print(json.dumps(document, indent=1, default=str))
        return 0
    timeline = capture.timeline()
    origin = next((moment for item in timeline if (moment := _moment(item))), 0.0)
    for item in timeline:
        print(_line(item, origin))
        if arguments.verbose and isinstance(item, WireExchange):
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
def diff_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="conformance diff",
        description="Compare two runs exchange by exchange: two captures, or two results files.")
    parser.add_argument("a", type=Path, metavar="A",
                        help="a pcap/pcapng file, a folder of them (one per case), or a results JSONL file")
    parser.add_argument("b", type=Path, metavar="B")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="the diff as JSON on stdout")
    output.add_argument("--html", type=Path, metavar="OUT", help="write a self-contained HTML page")
    parser.add_argument("--rules", type=Path, metavar="FILE", help="normalisation rules (JSON or YAML)")
    parser.add_argument("--port", type=int, action="append", metavar="N", help="Kafka server port in captures")
    parser.add_argument("--a-target", metavar="SPEC", help="A's target, when A holds results of several")
    parser.add_argument("--b-target", metavar="SPEC", help="B's target, when B holds results of several")
    parser.add_argument("--limit", type=int, default=20, help="differences shown per case in text (default 20)")
    return parser


def diff_main(argv: list[str] | None = None) -> int:
    from .diff import diff_runs
    from .html_report import render_html
    from .loaders import load_run
    from .normalise import Rules
    from .pcap import CaptureFileError
    from .render import render_json, render_text, summary

    arguments = diff_parser().parse_args(argv)
    try:
        rules = Rules.load(arguments.rules) if arguments.rules else Rules()
        a = load_run(arguments.a, ports=arguments.port, target=arguments.a_target)
        b = load_run(arguments.b, ports=arguments.port, target=arguments.b_target)
    except (OSError, ValueError, CaptureFileError) as error:
        print(f"conformance diff: {error}", file=sys.stderr)
        return TROUBLE
    result = diff_runs(a.groups, b.groups, rules, a_name=_name(arguments.a, arguments.a_target),
                       b_name=_name(arguments.b, arguments.b_target), a_outcomes=a.outcomes, b_outcomes=b.outcomes)
    if arguments.json:
        print(render_json(result))
    elif arguments.html:
        arguments.html.parent.mkdir(parents=True, exist_ok=True)
        arguments.html.write_text(render_html(result), encoding="utf-8")
        print(f"{summary(result)}\nwrote {arguments.html}")
    else:
        print(render_text(result, limit=arguments.limit))
    return 0 if result.same else 1


def _name(path: Path, target: str | None) -> str:
    return f"{path} (target {target})" if target else str(path)
