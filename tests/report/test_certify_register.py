"""certify register: bundles verified, then listed on one self-contained, escaped page (no broker, no browser)."""

from __future__ import annotations

import hashlib

from report_records import record
from signed_bundles import Keys, certify

from conformance.cli import main


def test_the_register_lists_verified_bundles_and_refuses_a_tampered_one(tmp_path, capsys):
    keys = Keys(tmp_path / "keys")
    good = certify(tmp_path, "a", [record("commit", 3, "passed", target="tansu", target_version="0.6.0")], keys=keys,
                   claims="capabilities: 1\nproduct: '<Tansu & co>'\nversion: '0.6.0'\ntransaction_versions: [0]\n"
                          "apis: {EndTxn: '0-4'}\n")
    bad = certify(tmp_path, "b", [record("commit", 3, "failed")], keys=keys)
    path = bad / "results.jsonl"
    path.write_text(path.read_text().replace('"failed"', '"passed"'))
    out = tmp_path / "register"
    assert main(["certify", "register", str(good), str(bad), "--out", str(out), "--trust", str(keys.public)]) == 1
    captured = capsys.readouterr()
    assert "1 of 2 bundles listed" in captured.out
    assert f"{bad}: not verified, not listed" in captured.err and "edited outcome" in captured.err
    html = (out / "index.html").read_text()
    assert "&lt;Tansu &amp; co&gt;" in html and "<Tansu" not in html  # escaped, as every value
    assert f"href='{good.name}/index.html'" in html and (out / good.name / "index.html").is_file()
    assert bad.name not in html
    assert "<script" not in html and "https://" not in html
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    manifest = out / good.name / "manifest.json"
    assert hashlib.sha256(manifest.read_bytes()).hexdigest() in html
    assert main(["certify", "verify", str(out / good.name), "--trust", keys.fingerprint]) == 0  # the copy verifies too


def test_an_empty_register_says_how_to_fill_it(tmp_path):
    from conformance.report.certify import register

    html = register.render([])
    assert "No certification bundle is registered yet" in html  # the page the interop site links until one is built


TANSU = "capabilities: 1\nproduct: Tansu\nversion: '0.6.0'\ntransaction_versions: [0]\napis: {EndTxn: '0-4'}\n"


def test_the_register_shows_who_signed_newest_first_and_flags_contradicting_bundles(tmp_path, capsys):
    import json
    import re

    ours, theirs = Keys(tmp_path / "ours"), Keys(tmp_path / "theirs")
    tansu = {"target": "tansu", "target_version": "0.6.0"}
    older = certify(tmp_path, "older", [record("commit", 3, "passed", run_id="run-1", **tansu)], keys=ours,
                    claims=TANSU)
    newer = certify(tmp_path, "newer", [record("commit", 3, "failed", run_id="run-2", **tansu)], keys=theirs,
                    claims=TANSU)
    again = certify(tmp_path, "again", [record("commit", 3, "failed", run_id="run-2", **tansu)], keys=ours,
                    claims=TANSU)
    # bundles of one target made in one second share a folder name (the register then lists the second under
    # its manifest's digits): named apart here, so the rows are found by name
    older, newer, again = (folder.rename(folder.with_name(f"{folder.name}-{label}"))
                           for folder, label in ((older, "older"), (newer, "newer"), (again, "again")))
    for folder, date in ((older, "2026-12-01T00:00:00Z"), (newer, "2026-12-03T00:00:00Z"),
                         (again, "2026-12-02T00:00:00Z")):  # certified on three days: made again, signed again
        path = folder / "certification.json"
        facts = json.loads(path.read_text())
        facts["generated_at"] = date
        path.write_text(json.dumps(facts, indent=1, default=str) + "\n")
        from conformance.report.certify import bundle, page, signing

        html = folder / "index.html"
        html.write_text(re.sub(r"<p class='meta'>[0-9TZ:-]+ ·", f"<p class='meta'>{date} ·", html.read_text()))
        manifest = json.loads((folder / "manifest.json").read_text())
        manifest["files"] = {name: bundle.sha256(folder / name) for name in manifest["files"]}
        (folder / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        signer = ours if folder != newer else theirs
        signing.sign(folder, folder / "manifest.json", signing.load_private(signer.private))
        assert page  # the page was made from the same JSON: verify compares it byte for byte
    out = tmp_path / "register"
    assert main(["certify", "register", str(older), str(newer), str(again), "--out", str(out),
                 "--trust", str(ours.public)]) == 0, capsys.readouterr()
    html = (out / "index.html").read_text()
    assert "<h1>Certification bundles</h1>" in html and "Certified implementations" not in html
    rows = re.findall(r"<tr class='entry[^']*' data-product='Tansu' data-folder='([^']+)' data-trusted='(\w+)' "
                      r"data-contradicts='(\d+)'>", html)
    assert rows == [(newer.name, "no", "1"), (again.name, "yes", "1"), (older.name, "yes", "2")]  # newest first
    assert f"contradicts {older.name}: Strict missed here, incomplete there" in html
    assert f"the same run as {again.name}" in html and f"the same run as {newer.name}" in html
    assert ours.fingerprint in html and theirs.fingerprint in html and "not a trusted key" in html
    for folder in (older, newer, again):  # a row's grade is the one its page shows
        level = next(level for level in json.loads((folder / "certification.json").read_text())["levels"]
                     if level["id"] == "strict")
        assert f"aria-label='Strict: {level['label']}'" in (out / folder.name / "index.html").read_text()
        row = html.split(f"data-folder='{folder.name}'")[1].split("</tr>")[0]
        assert f"aria-label='Strict: {level['label']}'" in row
