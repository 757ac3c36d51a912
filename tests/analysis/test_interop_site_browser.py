"""The interop site as a person uses it, in headless chromium: the matrix draws every target, a click on a departure
opens its evidence, a filter changes what is shown, the side-by-side page lists where two targets differ."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from chromium_pipe import Browser  # noqa: E402
from headless_chromium import colour_count  # noqa: E402
from interop_history import write_history  # noqa: E402

from conformance.cli import main  # noqa: E402

pytestmark = [pytest.mark.broker, pytest.mark.spark]  # starts Spark's JVM and chromium


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    from conformance.analysis.spark_session import spark_session

    folder = tmp_path_factory.mktemp("interop-site")
    spark = spark_session("local[2]")
    try:
        assert main(["analyze", "site", str(write_history(folder)), "--out", str(folder / "site")]) == 0
    finally:
        spark.stop()
    return folder / "site"


def visible_rows(browser: Browser, kind: str) -> int:
    return browser.evaluate(f"document.querySelectorAll('#matrix-body tr.{kind}').length")


def test_matrix_draws_every_target_and_a_click_opens_the_evidence(site, tmp_path):
    with Browser() as browser:
        browser.open((site / "matrix.html").as_uri())
        browser.wait_for("document.querySelectorAll('#matrix-head th.column').length > 0")
        headers = browser.evaluate("[...document.querySelectorAll('#matrix-head th.column')].map(e => e.innerText)")
        assert [" ".join(header.split()) for header in headers] == ["alpha 1.0", "alpha 2.0", "beta 1.0"]
        # Folded: the KIP's row with its counts, no case yet.
        assert visible_rows(browser, "kip") == 1 and visible_rows(browser, "case") == 0
        assert browser.text("#matrix-body tr.kip td:nth-child(2)").strip() == "3/4"  # alpha 1.0: 3 of 4 passed
        browser.click("#matrix-body tr.kip td.name")
        browser.click("#matrix-body tr.suite td.name")
        assert visible_rows(browser, "case") == 3
        assert browser.evaluate("document.getElementById('evidence').hidden")
        browser.click("tr.case[data-case='kip98.transactions::c1'] .v.has-evidence")
        browser.wait_for("!document.getElementById('evidence').hidden")
        shown = browser.text("#evidence")
        for expected in ("kip98.transactions::c1@v0", "alpha: failed", "Expected", "INVALID_TXN_STATE", "Observed",
                         "KIP-98: the coordinator MUST refuse it", "First departing step: 2 send EndTxn",
                         "EndTxn v3 on node-1", "conformance run --target alpha"):
            assert expected in shown, f"{expected!r} not in the evidence panel: {shown}"
        assert "InitProducerId v3" not in shown  # the step before the departing one is not its evidence
        shot = browser.screenshot(tmp_path / "matrix.png")
    assert colour_count(shot) > 50, "the screenshot is (nearly) blank"


def test_filters_change_what_is_shown(site):
    with Browser() as browser:
        browser.open((site / "matrix.html").as_uri())
        browser.wait_for("document.getElementById('shown').innerText.length > 0")
        assert browser.text("#shown") == "3 of 3 cases shown"
        browser.click("#filter-differ")  # c3 passed everywhere
        assert browser.text("#shown") == "2 of 3 cases shown"
        browser.click("#filter-differ")
        browser.choose("#filter-requirement", "SHOULD")
        assert browser.text("#shown") == "1 of 3 cases shown"
        browser.click("#open-all")
        assert browser.evaluate("[...document.querySelectorAll('tr.case')].map(e => e.dataset.case)") == [
            "kip98.transactions::c3"]
        browser.choose("#filter-requirement", "")
        browser.choose("#filter-outcome", "failed")
        assert browser.evaluate("[...document.querySelectorAll('tr.case')].map(e => e.dataset.case)") == [
            "kip98.transactions::c1", "kip98.transactions::c2"]


def test_two_targets_side_by_side(site):
    with Browser() as browser:
        browser.open((site / "compare.html").as_uri())
        browser.wait_for("document.getElementById('compare-shown').innerText.length > 0")
        browser.choose("#compare-a", "0")  # alpha 1.0
        browser.choose("#compare-b", "2")  # beta 1.0
        assert browser.text("#compare-shown") == "2 items differ, in 1 cases"
        rows = browser.evaluate("[...document.querySelectorAll('tr.compare-item')].map(e => e.innerText)")
        assert [" ".join(row.split()) for row in rows] == ["v0 0 failed 0 passed", "v1 1 passed 1 unsupported"]
