"""certify reproduce on a scripted target (hand-made runs, no broker): each item agrees, contradicts the bundle, is
flaky or is not reproduced; a level counting a flaky item is unstable, not reached; a bundle whose results were
edited is reported item by item; the signed record verifies, and one edited and resealed does not."""

from __future__ import annotations

import json

import pytest
from report_records import record, result_record
from reproduced_bundles import record_folder, scripted_runs
from signed_bundles import Keys, certify

from conformance.cli import main
from conformance.report.certify import bundle, levels, reproduction, signing


def idempotence(outcome: str = "passed", **changed) -> list[dict]:
    """Produce v3-v11 of one idempotence case, and two EndTxn items: what the bundle and the runs hold."""
    made = [record("dup", version, outcome, suite="kip98.idempotence", api="Produce") for version in range(3, 12)]
    made += [record("commit", 3, "failed"), record("commit", 4, "passed")]
    for item, outcome_there in changed.items():
        case, version = item.rsplit("_v", 1)
        for row in made:
            if row["case"] == case and row["api_version"] == int(version):
                row.update(record(case, int(version), outcome_there, suite=row["suite"], api=row["api"]))
    return made


@pytest.fixture()
def keys(tmp_path):
    return Keys(tmp_path / "keys")


@pytest.fixture()
def made(tmp_path, keys):
    return certify(tmp_path, "cert", idempotence(), keys=keys)


def reproduce(made, tmp_path, keys, *extra) -> tuple[int, object]:
    out = tmp_path / "reproductions"
    status = main(["certify", "reproduce", str(made), "--target", "kafka", "-o", str(out),
                   "--sign-key", str(keys.private), "--trust", str(keys.public), *extra])
    return status, record_folder(out)


# ------------------------------------------------------------------------------ the comparison and the levels
def test_each_item_agrees_contradicts_is_flaky_or_not_reproduced():
    claimed = [result_record(case, 3, outcome) for case, outcome in
               (("same", "passed"), ("other", "passed"), ("flips", "passed"), ("lost", "failed"), ("absent", "passed"),
                ("no-verdict", "passed"), ("errors", "error"))]
    first = [result_record(case, 3, outcome) for case, outcome in
             (("same", "passed"), ("other", "failed"), ("flips", "passed"), ("lost", "passed"), ("no-verdict", "error"),
              ("errors", "error"))]
    second = [result_record(case, 3, outcome) for case, outcome in
              (("same", "passed"), ("other", "failed"), ("flips", "failed"), ("lost", "error"), ("no-verdict", "error"),
               ("errors", "error"))]
    rows = {row["item"].split("::")[1].removesuffix("@v3"): row for row in
            reproduction.compare(claimed, [first, second], {"kip98.transactions::absent@v3": "a companion made it"})}
    assert {case: row["status"] for case, row in rows.items()} == {
        "same": "agrees", "other": "contradicts", "flips": "flaky", "lost": "contradicts", "absent": "not reproduced",
        "no-verdict": "not reproduced", "errors": "agrees"}
    assert rows["absent"]["why"] == "a companion made it" and rows["flips"]["runs"] == ["passed", "failed"]
    # a run that could not observe (error) is no evidence: "lost" is contradicted by the run that had a verdict
    assert rows["lost"]["why"] == "connection refused by 127.0.0.1:9092"
    assert rows["no-verdict"]["why"].startswith("no run reached a verdict")
    graded = {record.case: record.outcome for record in reproduction.reproduced_records([first, second])}
    assert graded["lost"] == "passed" and graded["flips"] == "failed" and graded["no-verdict"] == "error"


def test_a_level_counting_a_flaky_item_is_unstable_not_reached():
    rows = [result_record(row["case"], row["api_version"], row["outcome"], suite=row["suite"], api=row["api"])
            for row in idempotence()]
    level_list = levels.load_levels()
    steady = {grade.level.id: grade for grade in levels.grade(level_list, rows, {})}
    assert steady["idempotent-producer"].status == levels.REACHED
    shaky = {grade.level.id: grade for grade in levels.grade(level_list, rows, {}, flaky={"kip98.idempotence::dup@v5"})}
    assert shaky["idempotent-producer"].status == levels.UNSTABLE
    assert shaky["idempotent-producer"].passed == 8 and shaky["idempotent-producer"].counted == 9
    assert "1 flaky item: the outcome changed between runs of the target (kip98.idempotence::dup@v5)" in \
        shaky["idempotent-producer"].reasons
    # a level including it is not reached either; a stable departure of its own still misses it
    assert shaky["transactions"].status == levels.MISSED and steady["transactions"].status == levels.MISSED
    passing = [row for row in rows if row.outcome == "passed"]
    graded = {grade.level.id: grade for grade in levels.grade(level_list, passing, {},
                                                                 flaky={"kip98.idempotence::dup@v5"})}
    assert graded["transactions"].status == levels.UNSTABLE
    assert "includes Idempotent producer: unstable" in graded["transactions"].reasons


# ------------------------------------------------------------------------------ the command
def test_a_faithful_reproduction_agrees_item_by_item_and_is_signed(made, tmp_path, keys, monkeypatch, capsys):
    scripted_runs(monkeypatch, idempotence(), idempotence())
    status, folder = reproduce(made, tmp_path, keys)
    out = capsys.readouterr().out
    assert status == 0, out
    assert f"bundle verified, signed by {keys.fingerprint}" in out
    assert "2 runs: 11 items compared: 11 agree, 0 contradict the bundle, 0 flaky; 0 not reproduced" in out
    assert "note: the bundle is of version" not in out  # 4.4.0 both
    facts = json.loads((folder / reproduction.RECORD).read_text())
    assert facts["bundle"]["manifest_sha256"] == bundle.manifest_digest(made) and facts["signer"]["fingerprint"] == \
        keys.fingerprint
    checked = reproduction.verify(folder, {keys.fingerprint}, made)
    assert not checked.problems and checked.signer == keys.fingerprint and checked.trusted


def test_a_flaky_item_makes_its_levels_unstable_and_a_contradiction_is_named(made, tmp_path, keys, monkeypatch,
                                                                             capsys):
    newer = [{**row, "target_version": "4.5.0"} for row in idempotence(commit_v4="failed")]
    scripted_runs(monkeypatch, newer, [{**row, "target_version": "4.5.0"}
                                       for row in idempotence(dup_v5="failed", commit_v4="failed")])
    status, folder = reproduce(made, tmp_path, keys)
    out = capsys.readouterr().out
    assert status == 1
    assert "9 agree, 1 contradict the bundle, 1 flaky" in out
    assert "note: the bundle is of version 4.4.0, this target says 4.5.0: a difference may be the versions'" in out
    assert "contradicts: kip98.transactions::commit@v4: the bundle says passed, the runs failed, failed" in out
    assert "flaky: kip98.idempotence::dup@v5: the bundle says passed, the runs passed, failed" in out
    assert "Idempotent producer: the bundle says incomplete, the reproduction unstable: 1 flaky item" in out
    facts = json.loads((folder / reproduction.RECORD).read_text())
    assert facts["unstable"] == ["Idempotent producer"]


def test_a_bundle_whose_results_were_edited_is_reported_item_by_item(made, tmp_path, keys, monkeypatch, capsys):
    results = made / "results.jsonl"
    results.write_text(results.read_text().replace('"outcome": "failed"', '"outcome": "passed"'))
    scripted_runs(monkeypatch, idempotence(), idempotence())  # the broker still fails commit v3
    status, _ = reproduce(made, tmp_path, keys)
    out = capsys.readouterr().out
    assert status == 1
    assert "bundle NOT verified" in out and "edited outcome: kip98.transactions::commit@v3" in out
    assert "contradicts: kip98.transactions::commit@v3: the bundle says passed, the runs failed, failed" in out


def test_items_no_run_collects_are_not_reproduced_and_none_compared_fails(made, tmp_path, keys, monkeypatch, capsys):
    scripted_runs(monkeypatch, [], [])
    status, _ = reproduce(made, tmp_path, keys)
    out = capsys.readouterr().out
    assert status == 1 and "0 items compared" in out and "11 not reproduced" in out
    assert "suite kip98.idempotence is not among this harness's suites" not in out  # it is: the runs did not have it
    assert "no run of the reproduction collected it" in out


def test_usage_errors_are_one_line(tmp_path, capsys):
    assert main(["certify", "reproduce", str(tmp_path), "--target", "kafka"]) == 2
    assert "not a certification bundle" in capsys.readouterr().err
    assert main(["certify", "reproduce", str(tmp_path), "--target", "kafka", "--runs", "0"]) == 2
    assert "--runs needs at least 1" in capsys.readouterr().err


# ------------------------------------------------------------------------------ the record and the register
def reseal(folder, keys: Keys) -> None:
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["files"] = {name: bundle.sha256(folder / name) for name in manifest["files"]}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    signing.sign(folder, folder / "manifest.json", signing.load_private(keys.private))


def test_a_record_edited_and_resealed_is_refused_by_the_register(made, tmp_path, keys, monkeypatch, capsys):
    scripted_runs(monkeypatch, idempotence(commit_v4="failed"), idempotence(commit_v4="failed"))
    _, folder = reproduce(made, tmp_path, keys)
    path = folder / reproduction.RECORD
    facts = json.loads(path.read_text())
    for row in facts["items"]:
        row["status"] = "agrees"
    facts["counts"] = {"agrees": 11, "contradicts": 0, "flaky": 0, "not reproduced": 0}
    path.write_text(json.dumps(facts, indent=1) + "\n")
    assert reproduction.verify(folder, {keys.fingerprint}).problems[0].startswith("edited file: reproduction.json")
    reseal(folder, keys)
    capsys.readouterr()
    assert main(["certify", "register", str(made), "--reproduction", str(folder), "--out", str(tmp_path / "reg"),
                 "--trust", str(keys.public)]) == 1
    err = capsys.readouterr().err
    assert ("comparison does not follow: kip98.transactions::commit@v4 is 'agrees' in reproduction.json, the runs "
            "make it 'contradicts'") in err


def test_the_register_shows_who_reproduced_a_bundle_and_how_many_items_agree(made, tmp_path, keys, monkeypatch,
                                                                               capsys):
    other = Keys(tmp_path / "customer")
    scripted_runs(monkeypatch, idempotence(), idempotence(dup_v5="failed"))
    _, folder = reproduce(made, tmp_path, other)
    unrelated = certify(tmp_path, "unrelated", [record("abort", 3, "passed")], keys=keys)
    capsys.readouterr()
    out = tmp_path / "reg"
    assert main(["certify", "register", str(made), "--reproduction", str(folder), "--out", str(out),
                 "--trust", str(keys.public)]) == 0, capsys.readouterr()
    assert "1 of 1 bundles listed, 1 of 1 reproductions shown" in capsys.readouterr().out
    html = (out / "index.html").read_text()
    assert "data-reproduced='1'" in html and f"data-signer='{other.fingerprint}'" in html
    assert "10 of 11 items agree" in html and "1 flaky" in html and "a key not trusted here" in html
    assert "Idempotent producer: unstable (the bundle: incomplete)" in html
    assert (out / "reproductions" / folder.name / reproduction.RECORD).is_file()
    assert main(["certify", "register", str(unrelated), "--reproduction", str(folder), "--out", str(tmp_path / "r2"),
                 "--trust", str(keys.public)]) == 1
    assert "reproduces no bundle listed here" in capsys.readouterr().err


def test_a_departure_whose_answer_is_a_mapping_verifies_as_written(tmp_path, keys, capsys):
    """The page shows a departure's answer as JSON; the bundle's lines sort their keys, so the page made again at
    verify time once differed from the run's own (a fresh Tansu bundle failed verify as "edited page")."""
    row = record("commit", 3, "failed")
    row["actual"] = {"throttle_time_ms": 0, "brokers": [{"node_id": 1, "host": "127.0.0.1"}]}
    made = certify(tmp_path, "answer", [row], keys=keys)
    assert main(["certify", "verify", str(made), "--trust", keys.fingerprint]) == 0, capsys.readouterr().out


def test_two_bundles_of_one_name_are_both_listed(tmp_path, keys, capsys):
    """Bundles are named by target and second: two made in one second once shared one folder of the register."""
    first = certify(tmp_path, "one", [record("commit", 3, "passed")], keys=keys)
    second = certify(tmp_path, "two", [record("commit", 3, "failed")], keys=keys)
    second = second.rename(second.with_name(first.name))
    out = tmp_path / "reg"
    assert main(["certify", "register", str(first), str(second), "--out", str(out), "--trust", keys.fingerprint]) == 0
    html = (out / "index.html").read_text()
    renamed = f"{first.name}-{bundle.manifest_digest(second)[:12]}"
    assert f"href='{first.name}/index.html'" in html and f"href='{renamed}/index.html'" in html
    assert main(["certify", "verify", str(out / first.name), str(out / renamed), "--trust", keys.fingerprint]) == 0
    assert bundle.manifest_digest(out / renamed) == bundle.manifest_digest(second)


def test_an_interrupted_run_ends_the_reproduction_and_the_record_says_so(tmp_path, keys, monkeypatch, capsys):
    """Once, a SIGTERM ended run 1 and run 2 started all the same: an interrupted run is the last one."""
    made = certify(tmp_path, "frames", [record("api-versions-v0", 0, "passed", suite="robustness.malformed-frames",
                                               api="ApiVersions")], keys=keys)
    calls = []
    monkeypatch.setattr(pytest, "main", lambda *arguments, **options: calls.append(arguments) or 2)
    status, folder = reproduce(made, tmp_path, keys)
    assert status == 2 and len(calls) == 1
    assert "run 1 of 2 ended with pytest exit code 2 (interrupted" in capsys.readouterr().err
    facts = json.loads((folder / reproduction.RECORD).read_text())
    assert facts["runs"] == 1 and facts["stopped"].startswith("run 1 of 2 ended")


def test_an_unsigned_reproduction_is_not_shown(made, tmp_path, keys, monkeypatch, capsys):
    scripted_runs(monkeypatch, idempotence(), idempotence())
    out = tmp_path / "unsigned"
    assert main(["certify", "reproduce", str(made), "--target", "kafka", "-o", str(out)]) == 0
    assert "not signed: give --sign-key FILE" in capsys.readouterr().out
    assert main(["certify", "register", str(made), "--reproduction", str(record_folder(out)), "--out",
                 str(tmp_path / "reg"), "--trust", str(keys.public)]) == 1
    assert "unsigned: no signature.json" in capsys.readouterr().err
    assert "data-reproduced='0'" in (tmp_path / "reg" / "index.html").read_text()


def test_the_long_cases_run_again_only_where_the_bundle_ran_them():
    from conformance.cli.certify_reproduce import ran_long

    skipped = result_record("reinit-at-last-epoch", 3, "skipped", suite="kip360.epoch-exhaustion", tags=["long"])
    ran = result_record("reinit-at-last-epoch", 4, "failed", suite="kip360.epoch-exhaustion", tags=["long"])
    short = result_record("commit", 3, "failed")
    assert not ran_long([skipped, short]) and ran_long([skipped, ran, short])
