"""``conformance decode FILE``: the Kafka exchanges in a pcap or pcapng file (:func:`conformance.capture.commands.decode`)."""

from __future__ import annotations

from pathlib import Path


def register(commands) -> None:
    """Add ``conformance decode CAPTURE`` and its options to ``commands``."""
    decode = commands.add_parser("decode", help="decode a pcap of Kafka traffic (see: conformance decode --help)",
                                 description="Kafka exchanges in a pcap or pcapng file, one line each.")
    decode.add_argument("file", type=Path, metavar="FILE", help="a pcap or pcapng capture")
    decode.add_argument("--port", type=int, action="append", metavar="N",
                        help="a server port carrying Kafka (repeatable; default: recognise Kafka connections)")
    decode.add_argument("--json", action="store_true", help="one JSON document for tools")
    decode.add_argument("--bytes", action="store_true", help="with --json: the frames too, in base64")
    decode.add_argument("--verbose", "-v", action="store_true", help="decoded request and response bodies too")
    decode.set_defaults(handler=command_decode)


def command_decode(arguments) -> int:
    """Decode the Kafka traffic of a capture file and print it; the exit status."""
    from ..capture.commands import decode

    return decode(arguments.file, arguments.port, as_json=arguments.json, with_bytes=arguments.bytes,
                  verbose=arguments.verbose)
