"""``python -m conformance.bench [--record DIR] NAME [OPTIONS]``: the benchmark NAME, as ``python -m
conformance.bench.NAME`` runs it, and a record of the run (:mod:`.record`) written into DIR."""

from __future__ import annotations

import argparse
import sys
from importlib import import_module

from . import BENCHMARKS
from .record import DEFAULT_RECORDS, recorded, write_record


def main(argv: list[str] | None = None) -> int:
    """``python -m conformance.bench NAME [OPTIONS]``: run the named benchmark with its own options and write the
    record of the run; its exit status."""
    parser = argparse.ArgumentParser(prog="python -m conformance.bench")
    parser.add_argument("--record", default=DEFAULT_RECORDS, metavar="DIR",
                        help=f"where the run's record goes, what it printed with the machine, load, commit and date "
                             f"(default: {DEFAULT_RECORDS}; fixtures/benchmarks keeps it for the benchmarks page; "
                             f"'' for none)")
    parser.add_argument("benchmark", choices=BENCHMARKS, help="which benchmark to run")
    parser.add_argument("options", nargs=argparse.REMAINDER, help="the benchmark's own options (NAME --help)")
    arguments = parser.parse_args(argv)
    benchmark = import_module(f"{__package__}.{arguments.benchmark}")
    if not arguments.record:
        return benchmark.main(arguments.options)
    status, record = recorded(arguments.benchmark, arguments.options, lambda: benchmark.main(arguments.options))
    print(f"record: {write_record(record, arguments.record)}")
    return status


if __name__ == "__main__":
    sys.exit(main())
