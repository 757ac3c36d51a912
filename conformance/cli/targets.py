"""``conformance targets``: every target kind the plugins register, and whether it can run here."""

from __future__ import annotations


def register(commands) -> None:
    """Add ``conformance targets`` to ``commands``."""
    command = commands.add_parser("targets", help="target kinds, and whether each can run here")
    command.set_defaults(handler=command_targets)


def command_targets(arguments) -> int:
    """Print every target kind this installation knows and whether it can run here; 0."""
    from ..extension import Extensions
    from ..report.console.tables import print_table

    rows = []
    for kind in Extensions.for_run().target_kinds():
        try:
            reason = kind.availability()
        except Exception as error:  # noqa: BLE001 - one broken kind must not hide the others
            reason = f"availability check failed: {error}"
        rows.append([kind.name, kind.description, "yes" if reason is None else f"no: {reason}"])
    print_table(["kind", "description", "available here"], rows)
    return 0
