"""Inline SVG for the certification page: the outcome matrix and the level badges (no scripts, no fonts fetched)."""

from __future__ import annotations

from collections import Counter
from html import escape

from ...suite.model import OUTCOME_LABELS
from ...suite.model import OUTCOME_ORDER as MODEL_ORDER

# Worst first: the order a cell stacks the outcomes of its items (cases of one suite and API) in. An
# IMPLEMENTATION item that differs from Kafka is information, shown in blue, below every missing verdict.
OUTCOME_ORDER = ("failed", "blocked", "error", "differs", "skipped", "unsupported", "passed")
COLOURS = {"failed": "#d73a49", "blocked": "#e36209", "error": "#6f42c1", "differs": "#0969da",
           "skipped": "#b0b7bf", "unsupported": "#e1e4e8", "passed": "#28a745"}
assert set(OUTCOME_ORDER) == set(MODEL_ORDER) == set(COLOURS), "every outcome has its place and colour"
BADGE_COLOURS = {"reached": "#2da44e", "missed": "#cf222e", "incomplete": "#bf8700", "not run": "#6e7781"}
FONT = "font-family='DejaVu Sans,Verdana,Arial,sans-serif'"  # local fonts only; none is fetched


def worst(outcomes) -> str:
    present = set(outcomes)
    return next(outcome for outcome in OUTCOME_ORDER if outcome in present)


def matrix(records: list[dict]) -> str:
    """Rows: KIP / suite / API; columns: API versions; a cell stacks its items' outcomes, worst on top."""
    cells: dict[tuple, Counter] = {}
    rows: dict[tuple, None] = {}
    for record in records:
        row = (record.get("kip") or "", record.get("suite") or "", record.get("api") or "(no API)")
        rows[row] = None
        version = record.get("api_version")
        cells.setdefault((row, -1 if version is None else version), Counter())[record.get("outcome")] += 1
    ordered = sorted(rows)
    versions = sorted({version for _, version in cells}) or [0]
    cell, gap, left, top = 18, 2, 360, 34
    legend_width = sum(26 + 7 * len(OUTCOME_LABELS[outcome]) for outcome in OUTCOME_ORDER)
    width = max(left + len(versions) * (cell + gap) + 10, legend_width + 4)
    height = top + len(ordered) * (cell + gap) + 40
    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' class='matrix' width='{width}' height='{height}' "
             f"viewBox='0 0 {width} {height}' role='img' aria-label='outcome matrix' {FONT} font-size='11'>",
             "<text x='4' y='14' font-weight='bold'>KIP · suite · API under test</text>",
             f"<text x='{left}' y='14' font-weight='bold'>version</text>"]
    for column, version in enumerate(versions):
        x = left + column * (cell + gap)
        parts.append(f"<text x='{x + cell / 2}' y='{top - 6}' text-anchor='middle'>{'–' if version < 0 else version}</text>")
    for index, row in enumerate(ordered):
        y = top + index * (cell + gap)
        kip, suite, api = (escape(part) for part in row)
        parts.append(f"<text x='4' y='{y + 13}'>{kip} · {suite} · <tspan font-weight='bold'>{api}</tspan></text>")
        for column, version in enumerate(versions):
            counts = cells.get((row, version))
            if not counts:
                continue
            x = left + column * (cell + gap)
            tooltip = f"{row[1]} {row[2]} v{version}: " + ", ".join(f"{count} {name}" for name, count in counts.items())
            # Stacked by outcome, worst on top, so a cell where 1 of 4 cases departs still shows its passes.
            total, offset = sum(counts.values()), 0.0
            parts.append(f"<g class='cell {worst(counts)}'><title>{escape(tooltip)}</title>")
            for outcome in OUTCOME_ORDER:
                if counts.get(outcome):
                    share = cell * counts[outcome] / total
                    parts.append(f"<rect class='{outcome}' x='{x}' y='{y + offset:.2f}' width='{cell}' "
                                 f"height='{share:.2f}' fill='{COLOURS[outcome]}'/>")
                    offset += share
            parts.append("</g>")
    legend_y = top + len(ordered) * (cell + gap) + 16
    x = 4
    for outcome in reversed(OUTCOME_ORDER):
        parts.append(f"<rect class='legend {outcome}' x='{x}' y='{legend_y}' width='12' height='12' "
                     f"fill='{COLOURS[outcome]}'/>"
                     f"<text x='{x + 16}' y='{legend_y + 10}'>{OUTCOME_LABELS[outcome]}</text>")
        x += 26 + 7 * len(OUTCOME_LABELS[outcome])
    parts.append("</svg>")
    return "".join(parts)


def badge(label: str, status: str) -> str:
    """A flat two-part badge (shields style), sized by character count since no font metrics are at hand."""
    left_width, right_width = 10 + 7 * len(label), 10 + 7 * len(status)
    width = left_width + right_width
    colour = BADGE_COLOURS.get(status.split(" ")[0], BADGE_COLOURS["not run"])
    return (f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='20' role='img' "
            f"aria-label='{escape(label)}: {escape(status)}'><title>{escape(label)}: {escape(status)}</title>"
            f"<rect width='{left_width}' height='20' fill='#555'/>"
            f"<rect x='{left_width}' width='{right_width}' height='20' fill='{colour}'/>"
            f"<g fill='#fff' {FONT} font-size='11'>"
            f"<text x='{left_width / 2}' y='14' text-anchor='middle'>{escape(label)}</text>"
            f"<text x='{left_width + right_width / 2}' y='14' text-anchor='middle'>{escape(status)}</text></g></svg>")
