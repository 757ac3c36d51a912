"""certify verify: a fresh bundle is verified; each kind of tampering is named (no broker: hand-made results)."""

from __future__ import annotations

import json

import pytest
from report_records import record, write_jsonl
from signed_bundles import Keys

from conformance.cli import main
from conformance.report.certify import bundle

API_VERSIONS = {"api": "ApiVersions", "version": 4, "step": "negotiate", "response": {
    "error_code": 0, "api_keys": [{"api_key": 0, "min_version": 3, "max_version": 11},
                                  {"api_key": 26, "min_version": 0, "max_version": 4}],
    "supported_features": [{"name": "transaction.version", "min_version": 0, "max_version": 2}],
    "finalized_features": [{"name": "transaction.version", "min_version_level": 2, "max_version_level": 2}]}}


@pytest.fixture()
def keys(tmp_path):
    return Keys(tmp_path / "keys")


@pytest.fixture()
def fresh(tmp_path, keys):
    rows = [record("dup", version, "passed", suite="kip98.idempotence", api="Produce") for version in range(3, 12)]
    rows[0]["transcript"] = [API_VERSIONS]
    rows += [record("commit", 3, "failed", transcript=[{"api": "EndTxn", "version": 3, "response": {}}]),
             record("commit", 4, "passed"), record("abort", 3, "passed")]
    out = tmp_path / "cert"
    main(["certify", "--results", str(write_jsonl(tmp_path / "r.jsonl", rows)), "-o", str(out),
          "--sign-key", str(keys.private)])
    return next(out.glob("kafka-*"))


def rewrite_manifest(folder):
    """Tampering that also rewrites the manifest's file digests: only the deeper checks can tell (and the
    signature, which no longer holds)."""
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["files"] = {name: bundle.sha256(folder / name) for name in manifest["files"]}
    (folder / "manifest.json").write_text(json.dumps(manifest))


@pytest.fixture()
def verify(keys, capsys):
    def verifying(folder) -> tuple[int, str]:
        status = main(["certify", "verify", str(folder), "--trust", str(keys.public)])
        return status, capsys.readouterr().out
    return verifying


def test_a_fresh_bundle_is_verified_offline(fresh, keys, verify):
    assert {"results.jsonl", "levels.yaml", "grading.json", "manifest.json", "certification.json", "index.html",
            "transcripts"} <= {path.name for path in fresh.iterdir()}
    assert sorted(path.name for path in (fresh / "transcripts").iterdir()) == ["0.json", "9.json"]
    status, out = verify(fresh)
    assert status == 0 and f"{fresh}: verified, signed by {keys.fingerprint} (manifest sha256 " in out


def test_an_edited_outcome_is_named_and_the_levels_no_longer_follow(fresh, verify):
    path = fresh / "results.jsonl"
    path.write_text(path.read_text().replace('"outcome": "failed"', '"outcome": "passed"'))
    status, out = verify(fresh)
    assert status == 1 and "NOT verified" in out
    assert "edited outcome: kip98.transactions::commit@v3 is 'passed' in results.jsonl, 'failed' in the manifest" in out
    assert "level does not follow: Transactions status is 'missed' in certification.json; the results give" in out


def test_a_removed_item_is_named(fresh, verify):
    path = fresh / "results.jsonl"
    path.write_text("".join(line + "\n" for line in path.read_text().splitlines() if '"case": "abort"' not in line))
    status, out = verify(fresh)
    assert status == 1
    assert "removed item: kip98.transactions::abort@v3 (passed in the manifest, absent from results.jsonl)" in out


def test_a_missing_transcript_is_named(fresh, verify):
    (fresh / "transcripts" / "9.json").unlink()
    status, out = verify(fresh)
    assert status == 1 and "missing transcript: transcripts/9.json of kip98.transactions::commit@v3" in out


def test_a_changed_levels_file_is_named_even_with_a_rewritten_manifest(fresh, verify):
    path = fresh / "levels.yaml"
    path.write_text(path.read_text().replace("requirements: [MUST, SHOULD, MAY]", "requirements: [MUST]"))
    status, out = verify(fresh)
    assert status == 1 and "edited file: levels.yaml" in out
    rewrite_manifest(fresh)
    status, out = verify(fresh)
    assert status == 1 and "edited file" not in out
    assert "changed levels file: levels.yaml is not the levels file harness" in out


def test_another_harness_version_is_named(fresh, verify):
    path = fresh / "certification.json"
    facts = json.loads(path.read_text())
    facts["harness"]["version"] = "0.0.1"
    path.write_text(json.dumps(facts))
    rewrite_manifest(fresh)
    status, out = verify(fresh)
    assert status == 1
    assert "another harness version: the bundle was graded by kafka-conformance 0.0.1" in out
    assert "verify it with that version" in out


def test_an_unlisted_file_and_a_folder_that_is_no_bundle(fresh, tmp_path, verify):
    (fresh / "extra.txt").write_text("hello")
    status, out = verify(fresh)
    assert status == 1 and "unlisted file: extra.txt" in out
    status, out = verify(tmp_path)
    assert status == 1 and "no manifest.json: not a certification bundle" in out


def test_claim_checks_that_do_not_follow_are_named(tmp_path, keys, verify):
    rows = [record("commit", 3, "failed", transcript=[API_VERSIONS]), record("commit", 4, "passed")]
    claims = tmp_path / "c.yaml"
    claims.write_text("capabilities: 1\nproduct: X\ntransaction_versions: [0, 1, 2]\napis: {EndTxn: '0-4'}\n")
    out = tmp_path / "cert"
    main(["certify", "--results", str(write_jsonl(tmp_path / "r.jsonl", rows)), "--claims", str(claims),
          "-o", str(out), "--sign-key", str(keys.private)])
    folder = next(out.glob("kafka-*"))
    assert verify(folder)[0] == 0
    path = folder / "certification.json"
    facts = json.loads(path.read_text())
    facts["claims"]["checks"] = [row for row in facts["claims"]["checks"] if row["status"] != "claimed and departing"]
    path.write_text(json.dumps(facts))
    rewrite_manifest(folder)
    status, out_text = verify(folder)
    assert status == 1
    assert "claim check does not follow: the results make apis.EndTxn: 0-4 'claimed and departing'" in out_text


def test_results_of_a_suite_other_than_the_shipped_one_are_named(tmp_path, keys, verify):
    from conformance import resources

    copy = tmp_path / "suites" / "kip98" / "transactions.yaml"
    copy.parent.mkdir(parents=True)
    copy.write_text((resources.suites() / "kip98" / "transactions.yaml").read_text() + "# edited\n")
    rows = [record("commit", 3, "passed", path=str(copy))]
    out = tmp_path / "cert"
    main(["certify", "--results", str(write_jsonl(tmp_path / "r.jsonl", rows)), "-o", str(out),
          "--sign-key", str(keys.private)])
    status, text = verify(next(out.glob("kafka-*")))
    assert status == 1
    assert "changed suite: suites/kip98/transactions.yaml differs from the one this harness ships" in text
