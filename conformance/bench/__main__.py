"""``python -m conformance.bench NAME [OPTIONS]``: the benchmark NAME, as ``python -m conformance.bench.NAME`` runs it."""

from __future__ import annotations

import argparse
import sys
from importlib import import_module

from . import BENCHMARKS


def main(argv: list[str] | None = None) -> int:
    """``python -m conformance.bench NAME [OPTIONS]``: run the named benchmark with its own options; its exit status."""
    parser = argparse.ArgumentParser(prog="python -m conformance.bench")
    parser.add_argument("benchmark", choices=BENCHMARKS, help="which benchmark to run")
    parser.add_argument("options", nargs=argparse.REMAINDER, help="the benchmark's own options (NAME --help)")
    arguments = parser.parse_args(argv)
    return import_module(f"{__package__}.{arguments.benchmark}").main(arguments.options)


if __name__ == "__main__":
    sys.exit(main())
