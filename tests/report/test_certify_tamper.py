"""certify verify against forgeries, not only careless edits: a dishonest vendor edits, then reseals the manifest
and signs again. Each forgery fails naming its cause; a bundle signed again with another key verifies only as
"signed by <fingerprint>, not a trusted key". Bundles made from hand-made results (no broker)."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest
from report_records import record
from signed_bundles import Keys, certify

from conformance.cli import main
from conformance.report.certify import bundle, signing

API_VERSIONS = {"api": "ApiVersions", "version": 3, "step": "negotiate", "response": {
    "error_code": 0, "api_keys": [{"api_key": 0, "min_version": 3, "max_version": 11},
                                  {"api_key": 26, "min_version": 0, "max_version": 4}],
    "supported_features": [], "finalized_features": []}}


@pytest.fixture()
def keys(tmp_path):
    return Keys(tmp_path / "keys")


@pytest.fixture()
def other(tmp_path):
    return Keys(tmp_path / "other-keys")


def rows() -> list[dict]:
    made = [record("dup", version, "passed", suite="kip98.idempotence", api="Produce") for version in range(3, 12)]
    made[0]["transcript"] = [API_VERSIONS]
    return made + [record("commit", 3, "failed"), record("commit", 4, "passed"), record("abort", 3, "passed")]


@pytest.fixture()
def fresh(tmp_path, keys):
    return certify(tmp_path, "cert", rows(), keys=keys)


def reseal(folder, keys: Keys | None) -> None:
    """What a forger does after editing: every digest of the manifest made again (files and items), the results
    digest of certification.json too, and the manifest signed again with ``keys`` (the vendor's own key, when the
    vendor is the forger)."""
    from conformance.report.certify.certificate import results_digest
    from conformance.results.record import ResultRecord

    lines = [line for line in (folder / "results.jsonl").read_text().splitlines() if line.strip()]
    records = []
    for line in lines:
        row = json.loads(line)
        name = row.pop("transcript_file", None)
        if name:
            row["transcript"] = json.loads((folder / name).read_text())
        records.append(ResultRecord.from_line(row))
    facts = json.loads((folder / "certification.json").read_text())
    facts["results"]["digest"] = results_digest(records)
    (folder / "certification.json").write_text(json.dumps(facts, indent=1) + "\n")
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["files"] = {name: bundle.sha256(folder / name) for name in sorted(bundle._present(folder))
                         if name not in bundle.UNLISTED}
    manifest["items"] = {record.item_id: {"outcome": record.outcome, "sha256": hashlib.sha256(line.encode()).hexdigest()}
                         for record, line in zip(records, lines)}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    (folder / signing.SIGNATURE).unlink(missing_ok=True)
    if keys is not None:
        signing.sign(folder, folder / "manifest.json", signing.load_private(keys.private))


@pytest.fixture()
def verify(keys, capsys):
    def verifying(folder) -> tuple[int, str]:
        status = main(["certify", "verify", str(folder), "--trust", keys.fingerprint])
        return status, capsys.readouterr().out
    return verifying


def test_a_signed_bundle_verifies_only_with_its_key_trusted(fresh, keys, other, capsys):
    assert main(["certify", "verify", str(fresh), "--trust", str(keys.public)]) == 0
    assert f"verified, signed by {keys.fingerprint}" in capsys.readouterr().out
    assert main(["certify", "verify", str(fresh), "--trust", str(other.public)]) == 1
    assert f"signed by {keys.fingerprint}, not a trusted key" in capsys.readouterr().out
    html = (fresh / "index.html").read_text()
    assert f"<code>{keys.fingerprint}</code>" in html  # who signed, on the page
    assert keys.private.read_text() not in html + (fresh / "signature.json").read_text()


def test_keygen_writes_a_private_key_only_its_owner_reads_and_prints_the_fingerprint(tmp_path, capsys):
    assert main(["certify", "keygen", "--out", str(tmp_path / "k")]) == 0
    out = capsys.readouterr().out
    private = tmp_path / "k" / signing.PRIVATE_KEY
    assert private.stat().st_mode & 0o777 == 0o600
    from cryptography.hazmat.primitives import serialization

    public = serialization.load_pem_public_key((tmp_path / "k" / signing.PUBLIC_KEY).read_bytes())
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    assert f"fingerprint {hashlib.sha256(raw).hexdigest()}" in out
    assert "PRIVATE KEY" not in out and private.read_text().splitlines()[1] not in out
    assert main(["certify", "keygen", "--out", str(tmp_path / "k")]) == 2  # never overwritten
    assert "exists; not overwritten" in capsys.readouterr().err


def test_a_key_that_is_not_one_is_refused_in_one_line_without_its_content(tmp_path, capsys):
    secret = tmp_path / "secret.pem"
    secret.write_text("-----BEGIN PRIVATE KEY-----\nc2VjcmV0LXZhbHVl\n-----END PRIVATE KEY-----\n")
    assert main(["certify", "--results", str(tmp_path / "none.jsonl"), "--sign-key", str(secret)]) == 2
    err = capsys.readouterr().err
    assert f"{secret}: not an unencrypted private key in PEM" in err and "c2VjcmV0" not in err
    assert main(["certify", "verify", str(tmp_path), "--trust", "abc"]) == 2
    assert "--trust abc: neither a public key file nor a key fingerprint" in capsys.readouterr().err


# ------------------------------------------------------------------------------ the forgeries
def test_results_edited_then_graded_again_offline_verify_only_as_another_key(tmp_path, fresh, other, verify):
    edited = fresh / "results.jsonl"  # edited in place: certify reads the transcripts beside it
    edited.write_text(edited.read_text().replace('"outcome": "failed"', '"outcome": "passed"'))
    forged = tmp_path / "forged"
    assert main(["certify", "--results", str(edited), "-o", str(forged), "--sign-key", str(other.private)]) == 0
    status, out = verify(next(forged.iterdir()))
    assert status == 1 and f"signed by {other.fingerprint}, not a trusted key" in out
    unsigned = tmp_path / "unsigned"
    main(["certify", "--results", str(edited), "-o", str(unsigned)])
    status, out = verify(next(unsigned.iterdir()))
    assert status == 1 and "unsigned: no signature.json" in out


def test_an_edited_page_fails_even_resealed_and_signed_by_the_vendor(fresh, keys, verify):
    page = fresh / "index.html"
    page.write_text(page.read_text().replace(">MISSED<", ">REACHED<"))
    reseal(fresh, keys)
    status, out = verify(fresh)
    assert status == 1
    assert "edited page: index.html is not the page made from certification.json and the results" in out


def test_an_edited_badge_fails_even_resealed(fresh, keys, verify):
    badge = fresh / "badges" / "transactions.svg"
    badge.write_text(badge.read_text().replace("missed", "reached"))
    reseal(fresh, keys)
    status, out = verify(fresh)
    assert status == 1 and "edited badge: badges/transactions.svg is not the badge of Transactions 'missed'" in out


def test_a_bundle_resealed_without_a_key_is_unsigned(fresh, verify):
    reseal(fresh, None)
    status, out = verify(fresh)
    assert status == 1 and "unsigned: no signature.json, so nothing says who made the bundle" in out


def test_a_signature_of_another_manifest_is_named(fresh, keys, verify):
    signature = json.loads((fresh / signing.SIGNATURE).read_text())
    manifest = fresh / "manifest.json"
    manifest.write_text(manifest.read_text() + " ")
    status, out = verify(fresh)
    assert status == 1 and f"bad signature: manifest.json is not what key {keys.fingerprint} signed" in out
    assert base64.b64decode(signature["signature"])  # the signature itself untouched


# ------------------------------------------------------------------------------ judged again from the bytes
CASE = "init-producer-id-timeout-too-large"  # kip98.transactions: step 1 expects INVALID_TRANSACTION_TIMEOUT
STEP = "1 send InitProducerId"


def answered(error_code: int, version: int = 4) -> dict:
    """The InitProducerId exchange of that step as a transcript records it, the bytes encoded by the harness's
    codec."""
    from conformance.protocol import frames
    from conformance.protocol.codec import default_codec

    body = {"throttle_time_ms": 0, "error_code": error_code, "producer_id": -1, "producer_epoch": -1}
    raw = frames.encode_response(default_codec(), "InitProducerId", version, 7, body)
    return {"connection": "127.0.0.1:9092", "api": "InitProducerId", "api_key": 22, "version": version,
            "correlation_id": 7, "step": STEP, "request": {}, "response": dict(body),
            "response_bytes": base64.b64encode(raw).decode(), "problem": None}


def judged_rows() -> list[dict]:
    failed = record(CASE, 4, "failed", api="InitProducerId", transcript=[answered(-1)])
    failed.update(step=1, step_label=STEP, step_api="InitProducerId", expected="INVALID_TRANSACTION_TIMEOUT",
                  actual="UNKNOWN_SERVER_ERROR", message=f"{STEP}: expected INVALID_TRANSACTION_TIMEOUT, got "
                                                         "UNKNOWN_SERVER_ERROR")
    passed = record(CASE, 3, "passed", api="InitProducerId", transcript=[answered(50, 3)])  # 50: INVALID_TRANSACTION_TIMEOUT
    return [*rows(), failed, passed]


@pytest.fixture()
def judged(tmp_path, keys):
    return certify(tmp_path, "judged", judged_rows(), keys=keys)


def transcript_of(folder, case: str, version: int):
    for line in (folder / "results.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["case"] == case and row["api_version"] == version:
            return folder / row["transcript_file"]
    raise AssertionError(f"no transcript of {case} v{version}")


def test_an_honest_bundle_is_judged_again_from_its_bytes(judged, verify):
    status, out = verify(judged)
    assert status == 0, out
    assert "judged again from the bytes: 2 recorded responses decoded, 2 verdicts" in out


def test_an_error_code_edited_in_a_transcript_fails_even_resealed(judged, keys, verify):
    path = transcript_of(judged, CASE, 4)
    exchanges = json.loads(path.read_text())
    exchanges[0]["response"]["error_code"] = 0  # -1 -> 0: the JSON edited, the bytes left as they were
    path.write_text(json.dumps(exchanges, indent=1) + "\n")
    reseal(judged, keys)
    status, out = verify(judged)
    assert status == 1
    assert (f"forged transcript: kip98.transactions::{CASE}@v4: exchange 1 (InitProducerId v4, step '{STEP}'): "
            "the response shows response.error_code = 0; its bytes say -1") in out


def test_bytes_made_again_to_match_the_edit_contradict_the_verdict(judged, keys, verify):
    path = transcript_of(judged, CASE, 4)
    path.write_text(json.dumps([answered(50)], indent=1) + "\n")  # the bytes forged too: now they meet the case
    reseal(judged, keys)
    status, out = verify(judged)
    assert status == 1
    assert (f"verdict does not follow from the bytes: kip98.transactions::{CASE}@v4 states it got "
            "UNKNOWN_SERVER_ERROR at step '1 send InitProducerId'; the response's bytes answer "
            "INVALID_TRANSACTION_TIMEOUT") in out


def test_a_failed_item_flipped_to_passed_contradicts_its_bytes(judged, keys, verify):
    path = judged / "results.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for row in lines:
        if row["case"] == CASE and row["api_version"] == 4:
            row.update(outcome="passed", verdict="passed", step=None, step_label=None, step_role=None,
                       expected=None, actual=None, message="")
    path.write_text("".join(json.dumps(row, sort_keys=True) + "\n" for row in lines))
    reseal(judged, keys)
    status, out = verify(judged)
    assert status == 1
    assert (f"verdict does not follow from the bytes: kip98.transactions::{CASE}@v4 is passed, but the response's "
            f"bytes at step '{STEP}' answer UNKNOWN_SERVER_ERROR, which departs from the case's expectation "
            "(error_code INVALID_TRANSACTION_TIMEOUT)") in out


# ------------------------------------------------------------------------------ relabels
def edit_lines(folder, change) -> None:
    path = folder / "results.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for row in lines:
        change(row)
    path.write_text("".join(json.dumps(row, sort_keys=True) + "\n" for row in lines))


def test_every_line_s_harness_version_changed_is_named(tmp_path, keys, verify):
    folder = certify(tmp_path, "h", [{**row, "harness_version": harness_version()} for row in rows()], keys=keys)
    edit_lines(folder, lambda row: row.update(harness_version="9.9.9"))
    reseal(folder, keys)
    status, out = verify(folder)
    assert status == 1
    from conformance.report.certify.certificate import harness

    assert "harness relabelled: 12 result lines say harness 9.9.9 ran them; certification.json and the manifest " \
           f"say {harness()['version']}" in out


def harness_version() -> str:
    """What this harness writes in a results line (with its commit, in a checkout)."""
    from conformance.results.provenance import provenance

    return provenance().harness_version


def test_results_relabelled_as_another_target_are_named(fresh, keys, verify):
    edit_lines(fresh, lambda row: row.update(target="tansu", target_version="0.6.0"))
    reseal(fresh, keys)
    status, out = verify(fresh)
    assert status == 1
    assert "target relabelled: 12 result lines name target 'tansu'; certification.json says 'kafka'" in out
    assert "target version relabelled: 12 result lines say version '0.6.0'; certification.json says '4.4.0'" in out
    assert ("target relabelled: kip98.idempotence::dup@v3 ran as "
            "'suites/kip98/idempotence.yaml::dup[kafka-v3]' (its node id), but its line says it ran on 'tansu'") in out


def test_a_relabelled_certificate_contradicts_the_api_versions_it_was_taken_from(fresh, keys, verify):
    path = fresh / "certification.json"
    facts = json.loads(path.read_text())
    facts["fingerprint"]["apis"][0]["max"] = 12
    path.write_text(json.dumps(facts, indent=1) + "\n")
    reseal(fresh, keys)
    status, out = verify(fresh)
    assert status == 1
    assert "fingerprint does not follow: certification.json's apis is not what the results' ApiVersions answer says" \
        in out


def test_the_mock_relabelled_as_tansu_and_graded_again_is_named(tmp_path, keys, other, verify):
    mock = [{**row, "target": "rdkafka-mock", "nodeid": row["nodeid"].replace("[kafka-", "[rdkafka-mock-")}
            for row in rows()]
    folder = certify(tmp_path, "mock", mock, keys=keys)
    assert verify(folder)[0] == 0
    edit_lines(folder, lambda row: row.update(target="tansu:0.6.0", target_version="0.6.0"))
    for signer in (keys, other):  # the vendor's own key, or another one
        forged = tmp_path / f"forged-{signer.fingerprint[:8]}"
        main(["certify", "--results", str(folder / "results.jsonl"), "-o", str(forged), "--sign-key", str(signer.private)])
        status, out = verify(next(forged.iterdir()))
        assert status == 1
        assert ("target relabelled: kip98.idempotence::dup@v3 ran as "
                "'suites/kip98/idempotence.yaml::dup[rdkafka-mock-v3]' (its node id), but its line says it ran on "
                "'tansu:0.6.0'") in out
        assert f"signed by {signer.fingerprint}" + ("" if signer is keys else ", not a trusted key") in out


def test_a_bundle_only_signed_again_by_another_key_verifies_only_as_not_trusted(fresh, other, verify):
    signing.sign(fresh, fresh / "manifest.json", signing.load_private(other.private))
    facts = json.loads((fresh / "certification.json").read_text())
    assert facts["signer"]["fingerprint"] != other.fingerprint
    status, out = verify(fresh)  # the page names the first signer: this one fails as relabelled
    assert status == 1 and "signer relabelled: certification.json (and so the page) names" in out


def test_a_bundle_made_and_signed_by_another_key_verifies_only_as_not_trusted(tmp_path, other, verify):
    folder = certify(tmp_path, "theirs", rows(), keys=other)
    status, out = verify(folder)
    assert status == 1
    assert f"{folder}: signed by {other.fingerprint}, not a trusted key\n" in out and "NOT verified" not in out


# ------------------------------------------------------------------------------ careless edits (nothing resealed)
def flip_outcome(folder):
    path = folder / "results.jsonl"
    path.write_text(path.read_text().replace('"outcome": "failed"', '"outcome": "passed"'))


def remove_line(folder):
    path = folder / "results.jsonl"
    path.write_text("".join(line + "\n" for line in path.read_text().splitlines() if '"case": "abort"' not in line))


def change_transcript(folder):
    path = folder / "transcripts" / "0.json"
    path.write_text(path.read_text().replace('"max_version": 11', '"max_version": 12'))


def change_levels(folder):
    path = folder / "levels.yaml"
    path.write_text(path.read_text().replace("requirements: [MUST, SHOULD, MAY]", "requirements: [MUST]"))


def edit_grade(folder):
    path = folder / "certification.json"
    facts = json.loads(path.read_text())
    level = next(level for level in facts["levels"] if level["id"] == "transactions")
    level.update(status="reached", label="reached")
    path.write_text(json.dumps(facts, indent=1) + "\n")


@pytest.mark.parametrize(("edit", "named"), [
    (flip_outcome, "edited outcome: kip98.transactions::commit@v3 is 'passed' in results.jsonl, 'failed' in the "
                   "manifest"),
    (remove_line, "removed item: kip98.transactions::abort@v3 (passed in the manifest, absent from results.jsonl)"),
    (change_transcript, "edited file: transcripts/0.json"),
    (change_levels, "edited file: levels.yaml"),
    (edit_grade, "edited file: certification.json"),
])
def test_a_careless_edit_is_named(fresh, verify, edit, named):
    edit(fresh)
    status, out = verify(fresh)
    assert status == 1 and named in out
    assert "bad signature" not in out  # the manifest itself is untouched: its signature still holds


@pytest.mark.parametrize(("edit", "named"), [
    (change_levels, "changed levels file: levels.yaml is not the levels file harness"),
    (edit_grade, "level does not follow: Transactions status is 'reached' in certification.json; the results give "
                 "'missed'"),
])
def test_a_careless_edit_resealed_by_the_vendor_is_still_named(fresh, keys, verify, edit, named):
    edit(fresh)
    reseal(fresh, keys)
    status, out = verify(fresh)
    assert status == 1 and named in out


def test_certify_help_names_its_actions(capsys):
    with pytest.raises(SystemExit):
        main(["certify", "--help"])
    out = capsys.readouterr().out
    for action, purpose in (("keygen", "make the Ed25519 key that signs bundles"),
                            ("verify", "check a bundle offline"), ("register", "the static page of verified bundles")):
        assert f"conformance certify {action} " in out and purpose in out


def test_a_bundle_graded_at_another_commit_that_differs_says_so_first(fresh, keys, verify):
    from conformance.report.certify.certificate import harness

    if not harness().get("commit"):
        pytest.skip("this harness runs from a wheel: it has no commit to compare")
    path = fresh / "certification.json"
    facts = json.loads(path.read_text())
    facts["harness"]["commit"] = "0" * 40
    path.write_text(json.dumps(facts, indent=1) + "\n")
    page = fresh / "index.html"
    page.write_text(page.read_text().replace(">MISSED<", ">REACHED<"))
    reseal(fresh, keys)
    status, out = verify(fresh)
    problems = [line for line in out.splitlines() if line.startswith("  - ")]
    assert status == 1 and problems[0].startswith("  - another harness commit: the bundle was graded by")
    assert f"at commit {'0' * 40}; this checkout is at {harness()['commit']}: verify it there" in problems[0]
    assert any(line.startswith("  - edited page") for line in problems[1:])
