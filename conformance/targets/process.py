"""The life of a broker the harness runs as a local child process, shared by every such target kind.

A kind says how to launch its process (:meth:`ProcessTarget.launch`, on ports picked then) and when it serves
clients (:meth:`ProcessTarget.ready`); the base does the rest the same way for all of them: ``start()`` tries
again on fresh ports when a launch fails (another process may take a free port before the child binds it),
``ended()`` says how a process that died ended (the runner writes it into the crash's verdict), ``stop()``
ends it and keeps its output for ``logs()``, ``revive()`` starts it afresh after a crash (the runner calls it for
a kind that cannot ``restart()`` with its data kept), and processes still running when Python exits are stopped.
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from .base import Capability, Target, TargetUnavailable, stop_process
from .ports import free_port
from .readiness import wait_for_metadata

START_OUTPUT_CHARS = 2000  # of a failed launch's output, in the error that says it did not start

_running: set[ProcessTarget] = set()


class ProcessTarget(Target):
    """A target whose broker is a child process of the harness (see the module docstring).

    A kind sets :attr:`process_name` (how ``ended()`` names the process), :attr:`start_attempts`,
    :attr:`stop_signal` and :attr:`stop_grace_s`, implements :meth:`launch` and :meth:`ready`, and may implement
    :meth:`provision` (what comes before the first launch), :meth:`log_file` (where the running process writes)
    and :meth:`_discard_output` (what to delete once a process is gone). ``self._process`` is the running
    process (a :class:`subprocess.Popen`, set by :meth:`_launched`), None when there is none."""

    capabilities = frozenset({Capability.REVIVE})
    process_name = "the broker's process"
    signal_note = ""  # after "ended on SIGNAME": what such a signal means for this kind
    start_attempts = 1
    stop_signal: int = signal.SIGTERM
    stop_grace_s = 5.0
    log_tail_bytes: int | None = None  # the most of the log logs() returns (its end); None: all of it

    def __init_subclass__(cls, **kwargs) -> None:
        """Every kind is brought back after a crash: one that cannot restart with its data kept is revived."""
        super().__init_subclass__(**kwargs)
        if Capability.RESTART not in cls.capabilities:
            cls.capabilities = cls.capabilities | {Capability.REVIVE}

    def __init__(self, spec: str):
        super().__init__(spec)
        self._process: subprocess.Popen | None = None
        self._kept_log: str | None = None  # the output of the last process, once it is gone
        self._earlier_lives = ""  # the output of processes that crashed and were revived

    # what a kind supplies --------------------------------------------------------------------
    def provision(self) -> None:
        """Everything the first launch needs (binaries, folders, configuration); nothing by default."""

    def launch(self) -> None:
        """Start the process on ports picked now (handing it to :meth:`_launched`); return without waiting for it."""
        raise NotImplementedError

    def ready(self, began: float) -> str:
        """Empty once the launched process serves clients, else why it does not (``began``: when start() did)."""
        raise NotImplementedError

    def log_file(self) -> Path | None:
        """Where the running process writes its output; None where it writes none the harness keeps."""
        return None

    def _discard_output(self) -> None:
        """Delete what the last process left that ``logs()`` no longer needs (its output is kept by then)."""

    def _not_started(self, failure: str) -> NoReturn:
        raise TargetUnavailable(f"{self.spec} did not start: {failure}")

    # the life --------------------------------------------------------------------------------
    def start(self) -> None:
        """Provision, then launch until a process is ready (:attr:`start_attempts` at most, fresh ports each)."""
        if self._process is not None:
            return
        began = time.monotonic()
        self._kept_log = None
        self.provision()
        failure = ""
        for _ in range(self.start_attempts):
            self.launch()
            failure = self.ready(began)
            if not failure:
                return
            output = self._end_process()
            failure = f"{failure}; its output:\n{output[-START_OUTPUT_CHARS:]}"
        self._not_started(failure)

    def stop(self) -> None:
        """End the process; its output stays in ``logs()``."""
        if self._process is not None:
            self._kept_log = self._end_process()

    def revive(self) -> None:
        """A new process after the old one ended (its data, where it had any, lost); what the old one wrote stays
        in ``logs()``, the crash's evidence."""
        if self._process is not None:
            self._earlier_lives += self._end_process()
        self.start()

    def _launched(self, process: subprocess.Popen) -> None:
        """The process :meth:`launch` started: the target's from now on, stopped at the latest when Python exits."""
        self._process = process
        _running.add(self)

    def _end_process(self) -> str:
        """Stop the process (:attr:`stop_signal`, SIGKILL after :attr:`stop_grace_s`) and return its output."""
        self._halt(self.stop_signal, self.stop_grace_s)
        output = self._read_log() or ""
        self._discard_output()
        return output

    def _halt(self, first_signal: int, grace_s: float) -> subprocess.Popen | None:
        """End the process (``first_signal``, SIGKILL after ``grace_s``) and return it, reaped; None if none ran."""
        process, self._process = self._process, None
        _running.discard(self)
        if process is not None:
            stop_process(process, first_signal, grace_s)
        return process

    def kill(self) -> None:
        """SIGKILL, as a crash: no clean shutdown; what the process left on disk stays."""
        self._halt(signal.SIGKILL, 0)

    def pause(self, paused: bool) -> None:
        """SIGSTOP/SIGCONT: a broker that hangs without closing its connections."""
        if self._process is not None:
            self._process.send_signal(signal.SIGSTOP if paused else signal.SIGCONT)

    @property
    def pid(self) -> int | None:
        """The process id while it runs (for faults such as SIGSTOP), else None."""
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        """Whether the harness has the broker's process running (it may have died since: see :meth:`ended`)."""
        return self._process is not None

    def ended(self, wait: float = 0.0) -> str | None:
        """How the process ended ("Tansu's process ended on SIGKILL"), once it has; None while it runs."""
        code = self._exit_code(wait)
        return None if code is None else self.describe_exit(code)

    def _exit_code(self, wait: float) -> int | None:
        """The process's exit code once it has ended (negative: the signal that ended it), else None."""
        process = self._process
        if process is None:
            return None
        try:
            return process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            return None

    def describe_exit(self, code: int) -> str:
        """``code`` as the runner's crash verdicts say it: the signal by name, else the exit status."""
        if code < 0:
            return f"{self.process_name} ended on {signal.Signals(-code).name}{self.signal_note}"
        return f"{self.process_name} exited with status {code}"

    def logs(self) -> str | None:
        """Everything the process printed (its end, :attr:`log_tail_bytes`), also after it stopped, after the
        output of the processes revive() replaced."""
        current = self._read_log()
        if current is None:
            current = self._kept_log
        if self._earlier_lives:
            return self._earlier_lives + (current or "")
        return current

    def _read_log(self) -> str | None:
        path = self.log_file()
        if path is None or not path.exists():
            return None
        with open(path, "rb") as log:
            if self.log_tail_bytes is not None:
                log.seek(max(0, path.stat().st_size - self.log_tail_bytes))
            return log.read().decode(errors="replace")


@atexit.register
def _stop_running() -> None:
    for target in list(_running):
        try:
            target.stop()
        except Exception:  # noqa: BLE001 - exiting anyway: stop the others
            pass


class LoopbackProcess(ProcessTarget):
    """A broker process on one port of 127.0.0.1 that it is told on its command line, its output in a temporary
    file: ready once it answers Metadata there (Tansu, a broker of the user's own command line)."""

    log_prefix = "broker-"
    start_timeout_s = 20.0

    def __init__(self, spec: str):
        super().__init__(spec)
        self._port: int | None = None
        self._log_path: str | None = None

    def _start_on_a_free_port(self, command_for_port, **popen) -> None:
        """Launch ``command_for_port(port)`` on a port picked now, its output to a new temporary file."""
        self._port = port = free_port()
        command: Sequence[str] = command_for_port(port)
        log_fd, self._log_path = tempfile.mkstemp(prefix=self.log_prefix, suffix=".log")
        with os.fdopen(log_fd, "wb") as log:
            # the harness's own session on purpose: a Ctrl-C stops the broker too instead of orphaning it
            self._launched(subprocess.Popen(list(command), stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=subprocess.STDOUT, **popen))

    def ready(self, began: float) -> str:
        """Empty once the broker answers Metadata on its port, else why it is not ready."""
        process = self._process
        assert process is not None
        failure = wait_for_metadata(self.bootstrap, self.start_timeout_s, is_running=lambda: process.poll() is None)
        if process.poll() is not None:  # checked on success too: an answer on a port it lost came from another
            return f"exited with code {process.returncode}"
        return failure

    def log_file(self) -> Path | None:
        return Path(self._log_path) if self._log_path else None

    def _discard_output(self) -> None:
        if self._log_path:
            os.unlink(self._log_path)
            self._log_path = None

    @property
    def bootstrap(self) -> str:
        if self._port is None:
            raise RuntimeError(f"target {self.spec!r} is not started")
        return f"127.0.0.1:{self._port}"
