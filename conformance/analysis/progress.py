"""A one-line progress display on stderr while Spark works (Spark's own stage bars are off: they
draw over our output and say nothing of which step is running)."""

from __future__ import annotations

import sys
import threading
import time


class Progress:
    """``with Progress(spark, "decoding captures"):`` shows the step, its time, and tasks done."""

    def __init__(self, spark, label: str, *, stream=None, interval: float = 0.5):
        self.tracker = spark.sparkContext.statusTracker()
        self.label = label
        self.stream = stream or sys.stderr
        self.interval = interval
        self.live = self.stream.isatty()  # in a pipe or a log, one line per step and no redrawing
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.started = 0.0

    def __enter__(self) -> "Progress":
        self.started = time.monotonic()
        if self.live:
            self._thread = threading.Thread(target=self._draw, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *failure) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        state = "failed" if failure[0] else "done"
        self._write(f"{self.label}: {state} in {time.monotonic() - self.started:.1f} s", end="\n")

    def _tasks(self) -> str:
        done = total = 0
        for stage_id in self.tracker.getActiveStageIds():
            stage = self.tracker.getStageInfo(stage_id)
            if stage is not None:
                done += stage.numCompletedTasks
                total += stage.numTasks
        return f", {done}/{total} tasks" if total else ""

    def _draw(self) -> None:
        while not self._stop.wait(self.interval):
            self._write(f"{self.label}: {time.monotonic() - self.started:.0f} s{self._tasks()}")

    def _write(self, text: str, end: str = "") -> None:
        if self.live:
            self.stream.write("\r\033[K" + text + end)
        else:
            self.stream.write(text + end)
        self.stream.flush()
