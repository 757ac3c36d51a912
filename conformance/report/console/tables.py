"""Tables on the terminal, shared by the commands."""

from __future__ import annotations


def print_table(headers: list[str], rows: list[list], *, title: str | None = None) -> None:
    """A rich table on a terminal; tab-separated lines otherwise, so output can be piped to grep or cut."""
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # rich is a dependency, but a trimmed install still prints the lines
        console = None
    else:
        console = Console()
    if console is None or not console.is_terminal:
        if title:
            print(title)
        for row in [headers, *rows]:
            print("\t".join(str(cell) for cell in row))
        return
    table = Table(*headers, title=title)
    for row in rows:
        table.add_row(*(str(cell) for cell in row))
    console.print(table)
