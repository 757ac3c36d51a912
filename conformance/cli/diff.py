"""``conformance diff A B``: two runs compared exchange by exchange (:func:`conformance.capture.commands.diff`)."""

from __future__ import annotations

from pathlib import Path


def register(commands) -> None:
    """Add ``conformance diff A B`` and its options to ``commands``."""
    diff = commands.add_parser(
        "diff", help="wire-level diff of two runs or captures (see: conformance diff --help)",
        description="Compare two runs exchange by exchange: two captures, or two results files.")
    diff.add_argument("a", type=Path, metavar="A",
                      help="a pcap/pcapng file, a folder of them (one per case), or a results JSONL file")
    diff.add_argument("b", type=Path, metavar="B")
    output = diff.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="the diff as JSON on stdout")
    output.add_argument("--html", type=Path, metavar="OUT", help="write a self-contained HTML page")
    diff.add_argument("--rules", type=Path, metavar="FILE", help="normalisation rules (JSON or YAML)")
    diff.add_argument("--port", type=int, action="append", metavar="N", help="Kafka server port in captures")
    diff.add_argument("--a-target", metavar="SPEC", help="A's target, when A holds results of several")
    diff.add_argument("--b-target", metavar="SPEC", help="B's target, when B holds results of several")
    diff.add_argument("--limit", type=int, default=20, help="differences shown per case in text (default 20)")
    diff.set_defaults(handler=command_diff)


def command_diff(arguments) -> int:
    """Compare two runs' exchanges (captures or results files) and print or write the differences; the exit status."""
    from ..capture.commands import diff

    return diff(arguments.a, arguments.b, as_json=arguments.json, html=arguments.html, rules=arguments.rules,
                ports=arguments.port, a_target=arguments.a_target, b_target=arguments.b_target,
                limit=arguments.limit)
