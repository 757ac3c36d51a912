"""Write the interop site: six pages and two SVG pictures into one folder, opening from disk or any web server.

Spark aggregates (:mod:`.facts`), the departures' evidence is joined in Spark (:mod:`.evidence`), and the
driver shapes the small results into the pages' JSON (:mod:`.model`) and the pictures' geometry
(:mod:`.pictures`). Pages are Jinja2 templates (``site_*.j2`` in :mod:`conformance.pages`); each page that
is drawn in the browser carries its own JSON, so no page fetches anything.

Grading certification levels and spelling a rerun command belong to the report layer, which analysis
may not import: the caller (the command line) hands them in as ``grade`` and ``reproduce``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path

from ... import pages
from ...results.record import OUTCOME_LABELS, ResultRecord
from ..outcomes import OUTCOMES
from . import evidence, facts, model, pictures

# The register of certification bundles (conformance certify register, whose default --out is
# reports/interop/certified): a folder of the site, linked from every page's navigation. It lists every verified
# bundle, whatever level it reached: the folder keeps its name, the pages say "bundles".
REGISTER = "certified"

PAGES = ["index.html", "matrix.html", "scores.html", "history.html", "compare.html", "releases.html"]
PICTURES = ["matrix.svg", "history.svg"]


def _record(cell) -> ResultRecord:
    """A latest cell as the report layer reads a results record (grading, the rerun command)."""
    return ResultRecord(target=cell.target, target_version=cell.target_version, suite=cell.suite, case=cell.case,
                        kip=cell.kip, api=cell.api, api_version=cell.api_version, requirement=cell.requirement,
                        draft=bool(cell.draft), outcome=cell.outcome, nodeid=cell.nodeid, tags=[])


def _nodeid_only(record: ResultRecord) -> str:
    return str(record.nodeid or "")


def grades_per_column(cells: list, columns: list[dict], grade: Callable | None) -> dict:
    if grade is None:
        return {}
    suites = sorted({cell.suite for cell in cells})
    found = {}
    for column in columns:
        mine = [_record(cell) for cell in cells
                if (cell.target, cell.target_version) == (column["target"], column["version"])]
        found[(column["target"], column["version"])] = grade(mine, suites)
    return found


def write(folder: Path, template: str, **context) -> Path:
    path = folder / template
    path.write_text(pages.render(f"site_{Path(template).stem}.{'svg' if template.endswith('.svg') else 'html'}.j2",
                                 **context), encoding="utf-8")
    return path


def _json(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def build_site(spark, tables, out: str | Path, *, results_files: Sequence[str] = (), command: str = "",
               grade: Callable | None = None, reproduce: Callable | None = None) -> dict:
    """Write the site into ``out``; returns what it shows (counts) and the files written."""
    found = facts.gather(tables)
    shown = evidence.gather(spark, list(results_files), tables.exchanges, found.cells, reproduce or _nodeid_only)
    return write_site(out, found, shown, grade=grade, command=command)


def write_site(out: str | Path, found: facts.Facts, shown: dict, *, grade: Callable | None = None,
               command: str = "") -> dict:
    """The pages and pictures of what Spark found (no Spark needed from here on)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    columns = model.columns(found.cells)
    matrix = model.matrix(found.cells, columns, shown)
    labels = {name: OUTCOME_LABELS.get(name, name) for name in matrix["outcomes"]}
    matrix["labels"] = [labels[name] for name in matrix["outcomes"]]
    scores = model.scores(found.cells, columns, grades_per_column(found.cells, columns, grade))
    history = model.history(found.runs, found.changes, found.changed_items, found.flaky)
    matrix_picture, history_picture = pictures.matrix_picture(matrix), pictures.history_picture(history)
    summary = {"rows": sum(run["total"] for target in history for run in target["runs"]),
               "runs": sum(len(target["runs"]) for target in history), "targets": len(history),
               "columns": len(columns), "cases": len(matrix["cases"]), "departures": len(shown)}
    common = {"generated": datetime.now(timezone.utc).strftime("built %Y-%m-%d %H:%M UTC"), "labels": labels}
    register = out / REGISTER / "index.html"
    if not register.is_file():  # the nav links the register: until one is built there, a page saying how
        register.parent.mkdir(exist_ok=True)
        register.write_text(pages.render("register.html.j2", entries=[], generated=common["generated"]),
                            encoding="utf-8")
    written = [
        write(out, "index.html", title="Interop: which broker does what", current="index.html", data="",
              summary=summary, matrix_picture=matrix_picture, history_picture=history_picture, command=command,
              **common),
        write(out, "matrix.html", title="Interop matrix", current="matrix.html", data=_json(matrix), **common),
        write(out, "scores.html", title="Scores and certification levels", current="scores.html", data="",
              scores=scores, kips=sorted({case["kip"] for case in matrix["cases"]}), **common),
        write(out, "history.html", title="History", current="history.html", data="", history=history,
              history_picture=history_picture, outcomes=OUTCOMES, **common),
        write(out, "compare.html", title="Two targets side by side", current="compare.html", data=_json(matrix),
              **common),
        write(out, "releases.html", title="Apache Kafka releases", current="releases.html", data="",
              releases=model.releases(found.cells, columns, shown), **common),
        write(out, "matrix.svg", picture=matrix_picture, labels=labels),
        write(out, "history.svg", picture=history_picture, labels=labels),
    ]
    return {**summary, "files": written}
