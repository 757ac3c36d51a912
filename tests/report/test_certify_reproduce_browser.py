"""The register with signed, reproduced and contradicting rows, in headless chromium as a person reads it: which
bundle was reproduced, by whom, how many items agree; which reproduction contradicts its bundle; which bundles
contradict each other; who signed each; and nothing fetched from anywhere. Reproductions on a scripted target."""

from __future__ import annotations

import pytest
from chromium_pipe import Browser
from headless_chromium import colour_count
from report_records import record
from reproduced_bundles import record_folder, scripted_runs
from signed_bundles import Keys, certify

from conformance.cli import main

pytestmark = pytest.mark.broker  # starts chromium

def rows(run_id: str, failing: int | None = None, **where) -> list[dict]:
    return [record("dup", version, "failed" if version == failing else "passed", suite="kip98.idempotence",
                   api="Produce", run_id=run_id, **where) for version in range(3, 12)]


def certified(tmp_path, name: str, made: list[dict], keys: Keys):
    """The bundle, its folder named ``name``: bundles made in one second are otherwise named alike."""
    folder = certify(tmp_path, name, made, keys=keys)
    return folder.rename(folder.with_name(name))


def reproduce(monkeypatch, tmp_path, folder, keys: Keys, name: str, *runs: list[dict]):
    scripted_runs(monkeypatch, *runs)
    out = tmp_path / name
    main(["certify", "reproduce", str(folder), "--target", "tansu", "-o", str(out), "--sign-key", str(keys.private)])
    return record_folder(out)


def test_the_register_says_who_reproduced_each_bundle_and_which_contradict(tmp_path, monkeypatch):
    vendor, customer, stranger = Keys(tmp_path / "vendor"), Keys(tmp_path / "customer"), Keys(tmp_path / "stranger")
    tansu = {"target": "tansu", "target_version": "0.6.0"}
    honest = certified(tmp_path, "honest", rows("run-1", **tansu), vendor)
    boastful = certified(tmp_path, "boastful", rows("run-2", **tansu), vendor)
    other = certified(tmp_path, "other", rows("run-3", failing=5, **tansu), stranger)
    agreeing = reproduce(monkeypatch, tmp_path, honest, customer, "agreeing", rows("r", **tansu), rows("r", **tansu))
    contradicting = reproduce(monkeypatch, tmp_path, boastful, customer, "contradicting",
                              rows("r", failing=5, **tansu), rows("r", failing=5, **tansu))
    out = tmp_path / "register"
    assert main(["certify", "register", str(honest), str(boastful), str(other), "--reproduction", str(agreeing),
                 "--reproduction", str(contradicting), "--out", str(out), "--trust", str(vendor.public),
                 "--trust", str(customer.public)]) == 0
    with Browser(width=1400, height=1000) as browser:
        browser.open((out / "index.html").as_uri())
        browser.wait_for("document.querySelectorAll('tr.entry').length == 3")
        cell = "document.querySelector(\"tr.entry[data-folder='{}'] td.reproduced\")"

        def seen(folder) -> str:  # the text a person reads in the row's "reproduced" cell, which must be drawn
            element = cell.format(folder.name)
            assert browser.evaluate(f"{element}.getBoundingClientRect().width") > 100
            return browser.evaluate(f"{element}.innerText")

        said = seen(honest)
        assert "reproduced: 9 of 9 items agree" in said and customer.fingerprint in said and "a trusted key" in said
        said = seen(boastful)
        assert "contradicted: 8 of 9 items agree, 1 contradict it" in said and "Idempotent producer: missed (the bundle: incomplete)" in said
        colour = browser.evaluate(f"getComputedStyle({cell.format(boastful.name)}.querySelector('.false')).color")
        assert colour == "rgb(207, 34, 46)"  # red, as the other warnings of the page
        assert seen(other).strip() == "not reproduced"
        # the bundles of one product version that grade otherwise are flagged, and who signed each is named
        flagged = browser.evaluate(f"document.querySelector(\"tr.entry[data-folder='{other.name}']\").innerText")
        assert "contradicts" in flagged and "not a trusted key" in flagged and stranger.fingerprint in flagged
        assert browser.evaluate("performance.getEntriesByType('resource').length") == 0  # nothing fetched
        shot = browser.screenshot(tmp_path / "register.png")
        assert colour_count(shot) > 20, "the screenshot is (nearly) blank"
        browser.click(f"tr.entry[data-folder='{boastful.name}'] td.reproduced a")
        browser.wait_for("document.body.innerText.includes('manifest_sha256')")
        assert '"contradicts": 1' in browser.evaluate("document.body.innerText")
