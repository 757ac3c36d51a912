"""The geometry of the site's two SVG pictures; the markup is in ``site_matrix.svg.j2`` and ``site_history.svg.j2``.

- the matrix: a row per KIP, a column per target and version, each cell a bar split by the share of
  each outcome among the KIP's items in that column;
- the history: a panel per target, a bar per run split the same way, a dashed line where the broker's
  version changed and a triangle where the harness's did, a tick under the bar per regression.
"""

from __future__ import annotations

from collections import Counter

from ..outcomes import OUTCOMES
from .model import COLOURS

LABEL_WIDTH, CELL_WIDTH, CELL_HEIGHT, ROW_GAP = 170, 120, 14, 6
PANEL_HEIGHT, PANEL_GAP, PLOT_WIDTH, BAR_MAX = 90, 46, 900, 14
LEGEND_STEP = 140  # "differs from Kafka" fits
LEGEND_WIDTH = 4 + len(OUTCOMES) * LEGEND_STEP


def _segments(counts: list[int], x: float, y: float, width: float, height: float, *, vertical: bool) -> list[dict]:
    total = sum(counts)
    parts, offset = [], 0.0
    for outcome, count in zip(OUTCOMES, counts):
        if not count:
            continue
        size = (height if vertical else width) * count / total
        if vertical:  # stacked from the bottom up, passed lowest
            parts.append({"outcome": outcome, "fill": COLOURS[outcome], "x": x, "width": width,
                          "y": round(y + height - offset - size, 2), "height": round(size, 2)})
        else:
            parts.append({"outcome": outcome, "fill": COLOURS[outcome], "x": round(x + offset, 2), "width": round(size, 2),
                          "y": y, "height": height})
        offset += size
    return parts


def matrix_picture(page: dict) -> dict:
    columns = page["columns"]
    per_kip: dict[str, list[Counter]] = {}
    for case in page["cases"]:
        counters = per_kip.setdefault(case["kip"] or "(no KIP)", [Counter() for _ in columns])
        for position, cell in enumerate(case["cells"]):
            for entry in cell or []:
                counters[position][entry[1]] += 1
    top = 46
    rows = []
    for line, kip in enumerate(sorted(per_kip)):
        y = top + line * (CELL_HEIGHT + ROW_GAP)
        cells = []
        for position, counter in enumerate(per_kip[kip]):
            counts = [counter[index] for index in range(len(OUTCOMES))]
            x = LABEL_WIDTH + position * CELL_WIDTH
            total = sum(counts)
            cells.append({"x": x, "parts": _segments(counts, x, y, CELL_WIDTH - 10, CELL_HEIGHT, vertical=False)
                          if total else [],
                          "tooltip": f"{kip} on {columns[position]['label']}: " + (", ".join(
                              f"{count} {name}" for name, count in zip(OUTCOMES, counts) if count) or "not run")})
        rows.append({"label": kip, "y": y, "cells": cells})
    legend_y = top + len(rows) * (CELL_HEIGHT + ROW_GAP) + 10
    return {"width": max(LABEL_WIDTH + len(columns) * CELL_WIDTH + 10, LEGEND_WIDTH), "height": legend_y + 24, "top": top,
            "cell_height": CELL_HEIGHT,
            "columns": [{"x": LABEL_WIDTH + position * CELL_WIDTH, "target": column["target"],
                         "version": column["version"]} for position, column in enumerate(columns)],
            "rows": rows, "legend_y": legend_y, "legend": _legend()}


def _legend() -> list[dict]:
    return [{"x": 4 + index * LEGEND_STEP, "outcome": name, "fill": COLOURS[name]} for index, name in enumerate(OUTCOMES)]


def history_picture(targets: list[dict]) -> dict:
    panels = []
    for index, target in enumerate(targets):
        runs = target["runs"]
        step = min(BAR_MAX, PLOT_WIDTH / max(len(runs), 1))
        y = 20 + index * (PANEL_HEIGHT + PANEL_GAP)
        bars, broker, harness = [], [], []
        for position, run in enumerate(runs):
            x = LABEL_WIDTH + position * step
            bars.append({"parts": _segments(run["counts"], round(x, 2), y, round(max(step - 1, 1), 2), PANEL_HEIGHT,
                                            vertical=True) if run["total"] else [],
                         "tooltip": f"{target['target']} {run['version']} run {run['run']} ({run['started']}, "
                                    f"harness {run['harness'] or 'unknown'}): "
                         + ", ".join(f"{count} {name}" for name, count in zip(OUTCOMES, run["counts"]) if count)
                         + "".join(f"; {count} {kind}" for kind, count in run["changes"].items() if count),
                         "regressions": run["changes"]["regression"],
                         "tick": {"x": round(x, 2), "y": y + PANEL_HEIGHT + 2, "width": round(max(step - 1, 1), 2),
                                  "height": min(run["changes"]["regression"], 12)}})
            if run["broker_changed"]:
                broker.append({"x": round(x - 0.5, 2), "label": run["version"]})
            if run["harness_changed"]:
                harness.append({"x": round(x + step / 2, 2), "label": run["harness"] or "unknown"})
        panels.append({"target": target["target"], "y": y, "bars": bars, "broker": broker, "harness": harness,
                       "runs": len(runs), "first": runs[0]["started"] if runs else "",
                       "last": runs[-1]["started"] if runs else ""})
    height = 20 + len(targets) * (PANEL_HEIGHT + PANEL_GAP) + 10
    return {"width": max(LABEL_WIDTH + PLOT_WIDTH + 20, LEGEND_WIDTH), "height": height + 40, "panel_height": PANEL_HEIGHT,
            "panels": panels, "legend_y": height, "legend": _legend()}
