"""The register as a person sees it, in headless chromium: every entry drawn with its badges, its link opening the
certification page, and nothing fetched from anywhere."""

from __future__ import annotations

import pytest
from chromium_pipe import Browser
from headless_chromium import colour_count
from report_records import record
from signed_bundles import Keys, certify

from conformance.cli import main

pytestmark = pytest.mark.broker  # starts chromium


def bundle(tmp_path, name: str, target: str, outcome: str, keys: Keys):
    rows = [record("dup", version, outcome, suite="kip98.idempotence", api="Produce", target=target)
            for version in range(3, 12)]
    return certify(tmp_path, name, rows, keys=keys)


def test_the_register_renders_with_its_badges_and_links(tmp_path):
    keys = Keys(tmp_path / "keys")
    bundles = [bundle(tmp_path, "one", "kafka", "passed", keys), bundle(tmp_path, "two", "tansu", "failed", keys)]
    out = tmp_path / "register"
    assert main(["certify", "register", *map(str, bundles), "--out", str(out), "--trust", str(keys.public)]) == 0
    with Browser(width=1300, height=900) as browser:
        browser.open((out / "index.html").as_uri())
        browser.wait_for("document.querySelectorAll('tr.entry').length == 2")
        products = browser.evaluate("[...document.querySelectorAll('tr.entry')].map(row => row.dataset.product)")
        assert products == ["kafka", "tansu"]
        # The badges are drawn: each entry shows one per level, with a width the layout gave it.
        widths = browser.evaluate("[...document.querySelectorAll('tr.entry')].map(row => "
                                  "[...row.querySelectorAll('svg')].filter(svg => svg.getBoundingClientRect().width > 50).length)")
        assert widths[0] >= 8 and widths[0] == widths[1]
        assert browser.evaluate("!!document.querySelector(\"tr.entry[data-product='tansu'] "
                                "svg[aria-label='Idempotent producer: missed']\")")
        assert browser.evaluate("!!document.querySelector(\"tr.entry[data-product='kafka'] "
                                "svg[aria-label='Idempotent producer: incomplete']\")")
        assert browser.evaluate("performance.getEntriesByType('resource').length") == 0  # nothing fetched
        shot = browser.screenshot(tmp_path / "register.png")
        assert colour_count(shot) > 20, "the screenshot is (nearly) blank"
        browser.click("tr.entry[data-product='kafka'] a")
        browser.wait_for("document.title.startsWith('Certification of')")
        assert browser.evaluate("document.querySelectorAll('.level').length") >= 8
