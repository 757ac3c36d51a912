"""``python -m conformance``: the ``conformance`` command, for a checkout or a worktree whose code should run
rather than the installed console script's."""

from conformance.cli import command_line

if __name__ == "__main__":
    command_line()
