"""Apache Kafka with a secured listener, end to end: the harness provisions it (certificates, SCRAM
credentials at format time, an OIDC provider) and runs through it what only a provisioned target can (the
broker restarts); then the KIP-98 suites run as a vendor would, ``HOST:PORT --client-config`` with the
properties the target wrote and the ACL cases' principals named by ``--principal``; every bad input ends the
run in one line with exit code 2, and no output holds a secret."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.client.cluster import Cluster
from conformance.client.security import Security
from conformance.results.store import read_lines
from conformance.suite.loader import load_suites
from conformance.results.record import Outcome
from conformance.runner.parallel import items_of, run_items
from conformance.runner.runner import Runner
from conformance.targets.certificates import ONE_DAY
from conformance.targets.kafka.broker import KafkaTarget
from conformance.runner.steps import bundled

ROOT = Path(__file__).resolve().parents[2]
KIP98 = ROOT / "suites" / "kip98"
SUITES = [KIP98 / "transactions.yaml", KIP98 / "authorization.yaml"]
RESTARTS = KIP98 / "faults.yaml"  # the cases that restart the broker: only a provisioned target runs them
SECRET = "s3cr3t-XYZ"
SASL_SSL_512 = "kafka,security=SASL_SSL,sasl.mechanism=SCRAM-SHA-512"
SASL_SSL_256 = "kafka,security=SASL_SSL,sasl.mechanism=SCRAM-SHA-256"
MUTUAL_TLS = "kafka,security=SSL,ssl.client.auth=required"
OAUTHBEARER = "kafka,security=SASL_SSL,sasl.mechanism=OAUTHBEARER"  # JWTs from the harness's OIDC provider
OAUTHBEARER_PLAINTEXT = "kafka,security=SASL_PLAINTEXT,sasl.mechanism=OAUTHBEARER"
# Listeners that differ from another one above in one respect only (the hash; TLS underneath) run the
# transaction and authorization suites, provisioned: enough to show the difference authenticates and holds.
SHORTER = {SASL_SSL_256: "SCRAM-SHA-512's listener", OAUTHBEARER_PLAINTEXT: "OAUTHBEARER over TLS"}
# The listeners differ in how a connection authenticates, and every item opens connections of its own: the
# transaction and authorization suites (250-odd items) authenticate as the whole folder does. The whole KIP-98
# folder runs as HOST:PORT on one listener, the one with both TLS and SASL; the others run those two suites.
WHOLE_FOLDER = SASL_SSL_512
NOT_A_VERDICT = {Outcome.FAILED, Outcome.ERROR, Outcome.BLOCKED}

pytestmark = [pytest.mark.kafka, pytest.mark.broker]


@pytest.fixture(scope="module", params=[SASL_SSL_512, SASL_SSL_256, MUTUAL_TLS, OAUTHBEARER, OAUTHBEARER_PLAINTEXT])
def secured(request):
    target = KafkaTarget(request.param)
    target.secured.passwords["admin"] = SECRET  # what the outputs are searched for
    target.start()
    yield target
    target.stop()


def run_suites(target, paths) -> dict[Outcome, list[str]]:
    """Every item of ``paths`` on ``target``, four at a time (items name their own topics and ids; the
    ``serial`` ones, broker restarts among them, run alone after the others)."""
    suites, errors = load_suites(paths, components=bundled())
    assert errors == []
    runner = Runner(target, run_id="secured-kafka")
    outcomes: dict[Outcome, list[str]] = {}
    try:
        items = items_of(runner, [case for suite in suites for case in suite.cases])
        for result in run_items(runner, items, workers=4):
            outcomes.setdefault(result.outcome, []).append(f"{result.suite_id}::{result.case_id} v{result.version}: "
                                                           f"{result.message}")
    finally:
        runner.close()
    return outcomes


def test_the_kip98_suites_only_a_provisioned_target_runs_pass_through_the_secured_listener(secured):
    """Provisioned, the harness owns the broker: the cases that restart it run here, through the secured
    listener. The rest of KIP-98 on this listener is the HOST:PORT test below, as a vendor runs it (running its
    transaction and authorization items here as well would only repeat them on the same broker); the listeners in
    ``SHORTER`` have no HOST:PORT run and take the transaction and authorization suites here instead."""
    restarts = secured.spec not in SHORTER
    outcomes = run_suites(secured, [RESTARTS] if restarts else SUITES)
    bad = {outcome.value: found[:5] for outcome, found in outcomes.items() if outcome in NOT_A_VERDICT}
    assert bad == {}
    assert not any("no principal" in line for line in outcomes.get(Outcome.SKIPPED, []))
    if restarts:  # the cases that restart the broker, through the same listener
        assert {line.split("::")[0] for line in outcomes[Outcome.PASSED]} == {"kip98.faults"}
        assert any(line.startswith("kip98.faults::commit-after-broker-restart") for line in outcomes[Outcome.PASSED])
        return
    assert len(outcomes[Outcome.PASSED]) > 200
    authorization = [line for line in outcomes[Outcome.PASSED] if line.startswith("kip98.authorization")]
    assert len(authorization) > 20  # the principals reached the broker through the same listener


def test_the_target_says_where_its_client_properties_are_and_they_hold_what_users_write(secured):
    info = secured.info()
    assert info.bootstrap == secured.bootstrap != info.extra["plaintext_bootstrap"]
    path = Path(info.extra["client_config"])
    assert oct(path.stat().st_mode & 0o777) == "0o600" and SECRET in path.read_text()
    assert SECRET not in repr(info) and SECRET not in repr(secured.security)
    settings = dict(line.split("=", 1) for line in path.read_text().splitlines() if not line.startswith("#"))
    assert settings["security.protocol"] == info.extra["security"]["security.protocol"]
    java = dict(line.split("=", 1) for line in (path.parent / "client-java.properties").read_text().splitlines()
                if not line.startswith("#"))
    for written in (settings, java):  # both sets of keys reach the broker as the super user
        cluster = Cluster(secured.bootstrap, security=Security.from_client_config(written))
        assert cluster.metadata([])["brokers"]
        cluster.close()


def test_a_connection_reauthenticates_on_kafka_before_its_session_ends(tmp_path):
    """KIP-368 on Kafka itself: a listener ending sessions after 4 s; a connection used past that (idle,
    then busy) goes on, on the same socket, because the client re-authenticates in time."""
    target = KafkaTarget(SASL_SSL_512, overrides={
        "listener.name.sasl_ssl.scram-sha-512.connections.max.reauth.ms": 4000})
    target.start()
    try:
        cluster = Cluster(target.bootstrap, security=target.security)
        cluster.api_versions()
        connection = cluster.connection()
        port = connection.local_port
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            cluster.metadata([])
            time.sleep(0.5)
        time.sleep(4.5)  # idle across a whole session: the timer re-authenticates
        cluster.metadata([])
        assert connection.local_port == port and connection.reauthentications >= 3
        lifetimes = [exchange.response.get("session_lifetime_ms") for exchange in cluster.transcript.exchanges
                     if exchange.api == "SaslAuthenticate" and exchange.response]
        assert 0 < max(lifetimes) <= 4000
        cluster.close()
    finally:
        target.stop()


# ---------------------------------------------------------------------------- as HOST:PORT, as a user would
def conformance_run(tmp_path: Path, target: str, client_config: Path | None, *extra: str, paths=SUITES):
    """``conformance run`` in a process of its own; returns (exit code, everything it printed or wrote)."""
    results, allure, junit = tmp_path / "results.jsonl", tmp_path / "allure", tmp_path / "junit.xml"
    command = [sys.executable, "-m", "conformance.cli", "run", "--target", target, *map(str, paths),
               "--results", str(results), "--alluredir", str(allure), "--junit", str(junit), "--transcripts", "all"]
    if client_config is not None:
        command += ["--client-config", str(client_config)]
    done = subprocess.run(command + list(extra), capture_output=True, text=True, cwd=ROOT, timeout=600,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})
    written = done.stdout + done.stderr
    if results.exists():  # the reports made from the results too
        from conformance.cli import main

        main(["findings", str(results), "-o", str(tmp_path / "findings.md")])
        written += (tmp_path / "findings.md").read_text()
    for path in [results, junit, *allure.glob("**/*")]:
        if path.is_file():
            written += path.read_text(errors="replace")
    return done.returncode, done.stdout + done.stderr, written


def test_every_kip98_suite_passes_as_host_port_with_named_principals(secured, tmp_path):
    """What a vendor runs: the admin from ``--client-config``, ``guest`` and ``nobody`` from ``--principal``
    (``nobody`` through a YAML mapping file); no item skips for a missing principal, none departs, and every
    ACL a case granted is deleted after it. The whole folder on ``WHOLE_FOLDER``, the transaction and
    authorization suites on the other listeners."""
    if secured.spec in SHORTER:
        pytest.skip(f"as HOST:PORT on {SHORTER[secured.spec]}; this listener ran provisioned")
    info = secured.info()
    config, principals = Path(info.extra["client_config"]), info.extra["principal_configs"]
    if secured.spec == MUTUAL_TLS:  # the Java client's keys (PEM truststore, PKCS12 keystore) for the admin
        config = config.parent / "client-java.properties"
    (tmp_path / "principals.yaml").write_text(f"nobody: {principals['nobody']}\n")

    code, printed, written = conformance_run(tmp_path, secured.bootstrap, config, "--principal",
                                             f"guest={principals['guest']}", "--principal",
                                             str(tmp_path / "principals.yaml"),
                                             paths=[KIP98] if secured.spec == WHOLE_FOLDER else SUITES)
    assert code == 0, printed[-3000:]
    records = read_lines(tmp_path / "results.jsonl")
    by_outcome: dict[str, list[str]] = {}
    for record in records:
        by_outcome.setdefault(record["outcome"], []).append(f"{record['suite']}::{record['case']} "
                                                             f"v{record.get('api_version')}: {record.get('message')}")
    assert set(by_outcome) <= {"passed", "unsupported", "skipped"}, {
        outcome: found[:5] for outcome, found in by_outcome.items()}
    assert len(by_outcome["passed"]) > (850 if secured.spec == WHOLE_FOLDER else 200)
    assert not any("principal" in line for line in by_outcome.get("skipped", []))
    assert sum(line.startswith("kip98.authorization") for line in by_outcome["passed"]) > 20
    skipped_suites = {line.split("::")[0] for line in by_outcome.get("skipped", [])}
    assert skipped_suites <= {"kip98.faults"}, skipped_suites  # restarts: the harness does not own the broker
    assert any(exchange["api"] == "SaslAuthenticate" or secured.secured.mechanism is None
               for record in records for exchange in record["transcript"])
    assert any(exchange["api"] == "CreateAcls" for record in records for exchange in record["transcript"])
    assert SECRET not in written
    # every grant was deleted after its case: a filter matching any ACL of the guest's matches none
    cluster = Cluster(secured.bootstrap, security=secured.security)
    guest = secured.kafka_principal("guest") or "User:guest"
    any_acl = {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
               "principal_filter": guest, "host_filter": None, "operation": 1, "permission_type": 1}
    response = cluster.connection().request("DeleteAcls", cluster.best_version("DeleteAcls"),
                                            {"filters": [any_acl]}).response
    cluster.close()
    assert response["filter_results"][0]["error_code"] == 0
    assert response["filter_results"][0]["matching_acls"] == []


# ---------------------------------------------------------------------------- bad input: one line, exit code 2
def write(tmp_path: Path, name: str, settings: dict[str, str]) -> Path:
    path = tmp_path / name
    path.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
    return path


def bad_inputs(target: KafkaTarget, tmp_path: Path, stranger=None) -> list[tuple[str, str, Path | None, str]]:
    """(what, address, client config, the line that must say it) for the target's listener."""
    ca = str(target.secured.authority.path)
    base = {"security.protocol": target.secured.protocol, "ssl.ca.location": ca}
    cases = [
        ("untrusted certificate", target.bootstrap,
         write(tmp_path, "no-ca.properties", {**target.secured.client_settings(), "ssl.ca.location": "probe"}),
         "untrusted certificate: the broker's certificate is not signed by a CA this client trusts"),
        ("TLS to a plaintext port", target.plaintext_bootstrap,
         write(tmp_path, "tls.properties", {"security.protocol": "SSL", "ssl.ca.location": ca}),
         "TLS on a plaintext port"),
        ("plaintext to a TLS port", target.bootstrap, None, f"plaintext on a TLS port: {target.bootstrap} speaks TLS"),
    ]
    if target.secured.mechanism == "OAUTHBEARER":
        oidc = target.secured.client_settings()
        cases += [
            ("bad client credentials", target.bootstrap,
             write(tmp_path, "wrong.properties", {**oidc, "sasl.oauthbearer.client.secret": SECRET + "-wrong"}),
             "bad credentials: the token endpoint http://127.0.0.1:"),
            ("a token the broker does not trust", target.bootstrap,
             write(tmp_path, "stranger.properties", {**oidc, "sasl.oauthbearer.token.endpoint.url":
                                                     stranger.token_endpoint}),
             "bad credentials: the broker refused the OAUTHBEARER token (invalid_token"),
            ("a mechanism the broker does not enable", target.bootstrap,
             write(tmp_path, "mechanism.properties", {**base, "sasl.mechanism": "SCRAM-SHA-512",
                                                      "sasl.username": "admin", "sasl.password": SECRET}),
             "mechanism not enabled: the broker does not enable SASL mechanism SCRAM-SHA-512 on this listener "
             "(it enables: OAUTHBEARER)"),
        ]
    elif target.secured.mechanism:
        scram = {**base, "sasl.mechanism": target.secured.mechanism, "sasl.username": "admin"}
        other = "SCRAM-SHA-256" if target.secured.mechanism == "SCRAM-SHA-512" else "SCRAM-SHA-512"
        cases += [
            ("bad credentials", target.bootstrap,
             write(tmp_path, "wrong.properties", {**scram, "sasl.password": SECRET + "-wrong"}),
             f"bad credentials: the broker refused SASL/{target.secured.mechanism} authentication "
             "(SASL_AUTHENTICATION_FAILED"),
            ("a mechanism the broker does not enable", target.bootstrap,
             write(tmp_path, "mechanism.properties", {**scram, "sasl.mechanism": other, "sasl.password": SECRET}),
             f"mechanism not enabled: the broker does not enable SASL mechanism {other} on this listener "
             f"(it enables: {target.secured.mechanism})"),
        ]
    else:
        expired = target.secured.authority.issue("expired", "admin", valid_for=(-2 * ONE_DAY, -ONE_DAY))
        cases += [
            ("no client certificate", target.bootstrap, write(tmp_path, "no-cert.properties", base),
             "client certificate required"),
            ("an expired client certificate", target.bootstrap,
             write(tmp_path, "expired.properties", {**base, "ssl.certificate.location": str(expired.certificate),
                                                    "ssl.key.location": str(expired.key)}),
             "client certificate refused"),
        ]
    return cases


def test_each_bad_input_ends_the_run_in_one_line_before_any_case(secured, tmp_path, request):
    if secured.spec in SHORTER:
        pytest.skip(f"the same refusals as {SHORTER[secured.spec]}")
    from conformance.targets.oidc import TokenProvider

    stranger = TokenProvider(dict(secured.secured.passwords)).start()  # same clients, another signing key
    request.addfinalizer(stranger.stop)
    for what, address, config, line in bad_inputs(secured, tmp_path, stranger):
        folder = tmp_path / what.replace(" ", "-")
        folder.mkdir()
        code, printed, written = conformance_run(folder, address, config, paths=SUITES[:1])
        assert code == 2, f"{what}: exit code {code}\n{printed[-2000:]}"
        down = [text for text in printed.splitlines() if text.startswith(f"conformance target {address}: DOWN: ")]
        assert len(down) == 1 and line in down[0], f"{what}: {printed[-2000:]}"
        assert f"target '{address}' cannot be reached as configured: " in down[0]
        records = read_lines(folder / "results.jsonl")
        assert {record["outcome"] for record in records} == {"error"}
        assert all(record["transcript"] == [] or all(exchange["api"] in ("ApiVersions", "Metadata", "SaslHandshake",
                                                                         "SaslAuthenticate")
                                                     for exchange in record["transcript"]) for record in records)
        assert SECRET not in written, what
