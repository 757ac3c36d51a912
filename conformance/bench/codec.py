"""Codec benchmark: encode and decode the same messages with ours, kio and kafka-python.

Every measurement is timeit's: the callable runs in a loop sized to take about 0.2 s, and the
best of several loops counts (the least disturbed by the rest of the machine). The loops of the
implementations take turns, so a busy moment of the machine does not fall on one of them only.
Rates are operations per second; ratios above 1 mean ours is faster.

``python -m conformance.bench.codec [--repeats N] [--profile encode|decode]``
"""

from __future__ import annotations

import argparse
import cProfile
import io
import math
import pstats
import timeit
from collections.abc import Callable
from dataclasses import dataclass

from ..protocol.codec import default_codec
from .implementations import NotComparable, available_implementations
from .messages import BenchMessage, bench_messages

OPERATIONS = ("encode", "decode")


@dataclass
class Result:
    """The rates of one operation on one message, by implementation."""
    message: str
    operation: str
    rates: dict[str, float]  # implementation name -> operations per second
    notes: list[str]


def best_rates(functions: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """{name: operations per second}, timing the functions' loops in turn, ``repeats`` rounds."""
    timers = {name: timeit.Timer(function) for name, function in functions.items()}
    numbers = {name: timer.autorange()[0] for name, timer in timers.items()}
    best = {name: math.inf for name in timers}
    for _ in range(repeats):
        for name, timer in timers.items():
            best[name] = min(best[name], timer.timeit(numbers[name]))
    return {name: numbers[name] / best[name] for name in timers}


def measure(repeats: int = 5) -> tuple[list[Result], list[str], dict[str, str]]:
    """Encode and decode every bench message with every implementation installed: the results, the names measured and
    why the others are missing."""
    implementations, missing = available_implementations()
    codec = default_codec()
    results = []
    for message in bench_messages():
        data = codec.encode(message.api, message.version, message.direction, message.body)
        prepared, notes = {}, []
        for implementation in implementations:
            try:
                prepared[implementation.name] = implementation.prepare(message, data)
            except NotComparable as problem:
                notes.append(str(problem))
        for index, operation in enumerate(OPERATIONS):
            rates = best_rates({name: pair[index] for name, pair in prepared.items()}, repeats)
            results.append(Result(message.label, operation, rates, notes))
    return results, [implementation.name for implementation in implementations], missing


def ratio(results: list[Result], other: str, operation: str | None = None) -> float | None:
    """Geometric mean of ours / other over the results (of one operation, or all)."""
    ratios = [result.rates["ours"] / result.rates[other] for result in results
              if other in result.rates and (operation is None or result.operation == operation)]
    return math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else None


def render(results: list[Result], names: list[str], missing: dict[str, str]) -> str:
    """The results as a table, with our rate over each other implementation's."""
    others = [name for name in names if name != "ours"]
    header = ["message", "op", *(f"{name} ops/s" for name in names), *(f"ours/{name}" for name in others)]
    rows = []
    for result in results:
        rates = [f"{result.rates[name]:,.0f}" if name in result.rates else "-" for name in names]
        ratios = [f"{result.rates['ours'] / result.rates[name]:.2f}" if name in result.rates else "-"
                  for name in others]
        rows.append([result.message, result.operation, *rates, *ratios])
    for operation in (*OPERATIONS, None):
        means = [ratio(results, name, operation) for name in others]
        rows.append([f"geometric mean ({operation or 'all'})", "", *([""] * len(names)),
                     *(f"{mean:.2f}" if mean else "-" for mean in means)])
    widths = [max(len(str(row[column])) for row in [header, *rows]) for column in range(len(header))]
    lines = ["  ".join(cell.ljust(width) if column < 2 else cell.rjust(width)
                       for column, (cell, width) in enumerate(zip(row, widths))) for row in [header, *rows]]
    lines.insert(1, "  ".join("-" * width for width in widths))
    notes = sorted({note for result in results for note in result.notes})
    notes += [f"{name} not installed: {reason}" for name, reason in missing.items()]
    return "\n".join(lines + [f"note: {note}" for note in notes])


def profile(operation: str, rounds: int = 2000, top: int = 25) -> str:
    """cProfile of our codec doing ``operation`` on every benchmark message."""
    codec = default_codec()
    work = []
    for message in bench_messages():
        data = codec.encode(message.api, message.version, message.direction, message.body)
        body, _ = codec.decode(message.api, message.version, message.direction, data)
        work.append((message, data, body))
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(rounds):
        for message, data, body in work:
            _run(codec, operation, message, data, body)
    profiler.disable()
    stream = io.StringIO()
    pstats.Stats(profiler, stream=stream).sort_stats("tottime").print_stats(top)
    return stream.getvalue()


def _run(codec, operation: str, message: BenchMessage, data: bytes, body: dict):
    if operation == "encode":
        return codec.encode(message.api, message.version, message.direction, body)
    return codec.decode(message.api, message.version, message.direction, data)


def main(argv: list[str] | None = None) -> int:
    """Measure the codecs and print the table; the exit status."""
    parser = argparse.ArgumentParser(prog="python -m conformance.bench.codec",
                                     description="ours against kio and kafka-python, encode and decode")
    parser.add_argument("--repeats", type=int, default=5, help="timing repeats; the best counts")
    parser.add_argument("--profile", choices=OPERATIONS, help="print a cProfile of our codec instead of the comparison")
    arguments = parser.parse_args(argv)
    if arguments.profile:
        print(profile(arguments.profile))
        return 0
    results, names, missing = measure(arguments.repeats)
    print(render(results, names, missing))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
