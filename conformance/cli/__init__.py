"""The ``conformance`` command: list targets and cases, lint suites, and run them through pytest.

The rules of this package, the top layer of the harness beside ``conformance.bench``:

- one module per command (``deviations``, ``coverage`` and ``findings``, three Markdown documents
  written the same way, share :mod:`.documents`); each has a ``register(commands)``, which adds its
  parser and sets ``handler`` to the function that runs it; ``dispatch`` calls the handler, the one
  way a command runs;
- argparse lives here and nowhere below: the report, capture and analysis modules a command calls
  take plain arguments, print their output and return an exit code or a value;
- defaults come from :mod:`conformance.defaults`, the one place the pytest plugin reads them too;
- a module imports what the command needs inside its handler, so ``conformance --help`` loads
  neither pytest nor Spark.

``command_line`` is the console script (``conformance``) and ``python -m conformance.cli``: ``main``, then
the process ends; ``main`` runs a command in-process (tests). Anything after ``--`` goes to pytest
unchanged, for the commands in ``PYTEST_PASS_THROUGH`` only.
"""

from __future__ import annotations

import argparse
import atexit
import os
import sys
import threading
from typing import NoReturn

from .. import code_cache
from . import (analyze, attribution, certify, decode, diff, documents, explore, flaky, gate, lint, listing, releases, report, run,
               semantic, show, targets)

PYTEST_PASS_THROUGH = ("run", "flaky", "releases")  # commands that hand the arguments after -- to pytest

# Each command's register, in the order ``conformance --help`` lists them.
COMMANDS = (targets.register, lint.register, listing.register, documents.register_deviations,
            documents.register_coverage, decode.register, diff.register, documents.register_findings, run.register,
            releases.register, analyze.register, gate.register, show.register, certify.register, semantic.register,
            explore.register, flaky.register, report.register, attribution.register)


def build_parser() -> argparse.ArgumentParser:
    """The ``conformance`` command's parser: one sub-command per module of this package, each adding itself with its
    ``register``."""
    parser = argparse.ArgumentParser(prog="conformance", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for register in COMMANDS:
        register(commands)
    return parser


def command_line() -> NoReturn:
    """The process's command: :func:`main`, then an exit that skips Python's teardown.

    A run leaves hundreds of thousands of objects (suites, results, transcripts) that the interpreter would
    free one by one after the verdict was printed: 0.7 s of every ``conformance run``. The exit functions
    still run (the brokers' safety net, thread pools, logging, Spark); an exception still ends the process
    the usual way, with its traceback."""
    code = main()
    if any(thread.is_alive() and not thread.daemon for thread in threading.enumerate()
           if thread is not threading.main_thread()):
        sys.exit(code)  # work still under way: Python's own exit waits for it
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can reach it
            pass
    atexit._run_exitfuncs()  # what the interpreter would run next, before its teardown
    os._exit(code or 0)


def main(argv: list[str] | None = None) -> int:
    """Run ``conformance`` with ``argv`` (the process's arguments when None) and return its exit status."""
    code_cache.install()
    try:
        return dispatch(argv)
    except BrokenPipeError:  # `conformance list | head` closed the pipe: not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit flush
        return 0


def dispatch(argv: list[str] | None = None) -> int:
    """Call the handler of the sub-command ``arguments`` name and return its exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    pytest_arguments: list[str] = []
    if "--" in argv:
        split = argv.index("--")
        argv, pytest_arguments = argv[:split], argv[split + 1:]
    if len(argv) >= 2 and argv[0] == "certify" and argv[1] in certify.NESTED:  # certify verify, certify register
        return certify.dispatch_nested(argv[1:])
    parser = build_parser()
    arguments = parser.parse_args(argv)
    if pytest_arguments and arguments.command not in PYTEST_PASS_THROUGH:
        parser.error("arguments after -- are only for 'conformance run' and 'conformance flaky'")
    arguments.pytest_arguments = pytest_arguments
    return arguments.handler(arguments)
