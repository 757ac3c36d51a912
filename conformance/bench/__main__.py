"""``python -m conformance.bench codec [--repeats N] [--profile encode|decode]``."""

from __future__ import annotations

import argparse
import sys

from . import codec


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.bench")
    commands = parser.add_subparsers(dest="command", required=True)
    codec_command = commands.add_parser("codec", help="ours against kio and kafka-python, encode and decode")
    codec_command.add_argument("--repeats", type=int, default=5, help="timing repeats; the best counts")
    codec_command.add_argument("--profile", choices=codec.OPERATIONS,
                               help="print a cProfile of our codec instead of the comparison")
    arguments = parser.parse_args(argv)
    if arguments.profile:
        print(codec.profile(arguments.profile))
        return 0
    results, names, missing = codec.measure(arguments.repeats)
    print(codec.render(results, names, missing))
    return 0


if __name__ == "__main__":
    sys.exit(main())
