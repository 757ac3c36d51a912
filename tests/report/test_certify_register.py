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
    assert "No implementation is registered yet" in html  # the page the interop site links until one is built
