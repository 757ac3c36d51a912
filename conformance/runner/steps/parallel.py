"""The ``parallel`` step: branches of steps, each on its own connections in its own thread, sharing the
case's variables and transcript. A branch still running at the deadline makes the case incomplete.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping

from ...suite.kinds import StepKind
from ..context import Context, Incomplete
from ..dispatch import run_steps

PARALLEL_DEADLINE_S = 120.0


def parallel_step(context: Context, step: dict, index: str, name: str) -> None:
    branches = step["parallel"]
    failures: list[BaseException] = []
    contexts = [context.branch() for _ in branches]

    def run(branch_index: int, steps: list[dict]) -> None:
        try:
            run_steps(contexts[branch_index], steps, f"{index}.{branch_index + 1}.")
        except BaseException as error:  # noqa: BLE001 - collected and re-raised in the caller's thread
            failures.append(error)

    threads = [threading.Thread(target=run, args=(number, steps), daemon=True) for number, steps in enumerate(branches)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + PARALLEL_DEADLINE_S
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    running = [number + 1 for number, thread in enumerate(threads) if thread.is_alive()]
    finished_failures = list(failures)  # closing the connections below makes a running branch fail too
    for branch in contexts:
        branch.close()
        branch.cluster.close()
    if finished_failures:
        raise finished_failures[0]
    if running:
        raise Incomplete(f"step {index} parallel: branch {', '.join(map(str, running))} still running after "
                         f"{PARALLEL_DEADLINE_S:.0f}s; its steps were not all checked")


def _parallel_nested(step: Mapping):
    branches = step["parallel"] if isinstance(step.get("parallel"), list) else []
    return [(("parallel", number), branch) for number, branch in enumerate(branches) if isinstance(branch, list)]


KIND = StepKind("parallel", parallel_step, nested=_parallel_nested,
                with_nested=lambda step, expanded: {**step, "parallel": expanded})
