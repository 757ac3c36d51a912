"""The drawings of the certification page: the outcome matrix and the level badges, as inline SVG.

Geometry is computed here (rows, columns, coordinates, widths, colours); the markup is in the templates
``matrix.svg.j2`` and ``badge.svg.j2`` of :mod:`conformance.pages`, which escape every text that reaches a
drawing. No script and no font is fetched: the font families named are local ones.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ... import pages
from ...results.record import OUTCOME_LABELS, SEVERITY_ORDER, ResultRecord

# A cell stacks the outcomes of its items (cases of one suite and API) worst first (SEVERITY_ORDER); an
# IMPLEMENTATION item that differs from Kafka is information, shown in blue, below every missing verdict.
COLOURS = {"failed": "#d73a49", "blocked": "#e36209", "error": "#6f42c1", "differs": "#0969da",
           "skipped": "#b0b7bf", "unsupported": "#e1e4e8", "passed": "#28a745"}
assert set(SEVERITY_ORDER) == set(COLOURS), "every outcome has its colour"
BADGE_COLOURS = {"reached": "#2da44e", "missed": "#cf222e", "unstable": "#8250df", "incomplete": "#bf8700",
                 "not run": "#6e7781"}


def worst(outcomes) -> str:
    present = set(outcomes)
    return next(outcome for outcome in SEVERITY_ORDER if outcome in present)


def matrix(records: Sequence[ResultRecord]) -> dict:
    """What ``matrix.svg.j2`` draws. Rows: KIP / suite / API; columns: API versions; a cell stacks its items'
    outcomes, worst on top."""
    cells: dict[tuple, Counter] = {}
    rows: dict[tuple, None] = {}
    for record in records:
        row = (record.kip or "", record.suite or "", record.api or "(no API)")
        rows[row] = None
        version = record.api_version
        cells.setdefault((row, -1 if version is None else version), Counter())[record.outcome] += 1
    ordered = sorted(rows)
    versions = sorted({version for _, version in cells}) or [0]
    cell, gap, left, top = 18, 2, 360, 34
    legend_width = sum(26 + 7 * len(OUTCOME_LABELS[outcome]) for outcome in SEVERITY_ORDER)
    width = max(left + len(versions) * (cell + gap) + 10, legend_width + 4)
    height = top + len(ordered) * (cell + gap) + 40
    columns = [{"x": left + column * (cell + gap) + cell / 2, "text": "–" if version < 0 else version}
               for column, version in enumerate(versions)]
    lines = []
    for index, row in enumerate(ordered):
        y = top + index * (cell + gap)
        drawn = []
        for column, version in enumerate(versions):
            counts = cells.get((row, version))
            if not counts:
                continue
            x = left + column * (cell + gap)
            # Stacked by outcome, worst on top, so a cell where 1 of 4 cases departs still shows its passes.
            total, offset, stack = sum(counts.values()), 0.0, []
            for outcome in SEVERITY_ORDER:
                if counts.get(outcome):
                    share = cell * counts[outcome] / total
                    stack.append({"outcome": outcome, "y": y + offset, "height": share, "fill": COLOURS[outcome]})
                    offset += share
            drawn.append({"x": x, "worst": worst(counts), "stack": stack,
                          "tooltip": f"{row[1]} {row[2]} v{version}: "
                                     + ", ".join(f"{count} {name}" for name, count in counts.items())})
        lines.append({"y": y, "kip": row[0], "suite": row[1], "api": row[2], "cells": drawn})
    legend, x = [], 4
    for outcome in reversed(SEVERITY_ORDER):
        legend.append({"outcome": outcome, "x": x, "fill": COLOURS[outcome], "label": OUTCOME_LABELS[outcome]})
        x += 26 + 7 * len(OUTCOME_LABELS[outcome])
    return {"width": width, "height": height, "left": left, "top": top, "cell": cell, "columns": columns,
            "rows": lines, "legend": legend, "legend_y": top + len(ordered) * (cell + gap) + 16}


def badge_shape(label: str, status: str) -> dict:
    """A flat two-part badge (shields style), sized by character count since no font metrics are at hand."""
    left_width, right_width = 10 + 7 * len(label), 10 + 7 * len(status)
    return {"label": label, "status": status, "left_width": left_width, "right_width": right_width,
            "colour": BADGE_COLOURS.get(status.split(" ")[0], BADGE_COLOURS["not run"])}


def badge(label: str, status: str) -> str:
    """One badge as a standalone SVG document (``badges/<level>.svg``); the page draws the same one inline."""
    return pages.render("badge.svg.j2", badge=badge_shape(label, status))
