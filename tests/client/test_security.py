"""TLS and SASL/PLAIN: client configs read as Kafka users write them, then a real broker that requires them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conformance.client.security import Security, SecurityConfigError
from conformance.suite.loader import load_suites
from conformance.results.record import Outcome
from conformance.runner.runner import Runner
from conformance.targets.ports import free_port
from conformance.targets.hostport import HostPortTarget
from conformance.targets.kafka.broker import KafkaTarget
from conformance.runner.steps import bundled

ROOT = Path(__file__).resolve().parents[2]
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')


# ---------------------------------------------------------------------------- client configs
def test_librdkafka_keys():
    security = Security.from_client_config({"security.protocol": "SASL_SSL", "sasl.mechanisms": "PLAIN",
                                            "sasl.username": "alice", "sasl.password": "s3cret",
                                            "ssl.ca.location": "/ca.pem"})
    assert (security.sasl_username, security.sasl_password, security.tls, security.tls_ca_file) == \
        ("alice", "s3cret", True, "/ca.pem")
    assert "s3cret" not in repr(security)


def test_java_client_keys():
    security = Security.from_client_config({
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                            'username="bob" password="p\\"w";'})
    assert (security.sasl_username, security.sasl_password, security.tls) == ("bob", 'p"w', False)
    tls = Security.from_client_config({"security.protocol": "SSL", "ssl.truststore.type": "PEM",
                                       "ssl.truststore.location": "/ca.pem",
                                       "ssl.endpoint.identification.algorithm": ""})
    assert tls.tls and tls.tls_ca_file == "/ca.pem" and not tls.tls_check_hostname


@pytest.mark.parametrize("settings, key", [
    ({"security.protocol": "KERBEROS"}, "security.protocol"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI", "sasl.username": "u"}, "sasl.mechanism"),
    ({"security.protocol": "SASL_PLAINTEXT"}, "sasl.username"),
    ({"security.protocol": "SSL", "ssl.truststore.location": "/t.jks"}, "ssl.truststore.location"),
    ({"security.protocol": "SSL", "enable.ssl.certificate.verification": "maybe"}, "enable.ssl.certificate"),
])
def test_settings_the_raw_client_cannot_honour_are_refused_by_key(settings, key):
    with pytest.raises(SecurityConfigError, match=key):
        Security.from_client_config(settings)


def test_plaintext_needs_nothing():
    assert Security.from_client_config({}) == Security()


# ---------------------------------------------------------------------------- a secured broker
def make_certificates(directory: Path) -> tuple[Path, Path]:
    """A CA, and a broker key and certificate for 127.0.0.1 signed by it: (ca.pem, broker.pem)."""
    def openssl(*arguments: str) -> None:
        subprocess.run(["openssl", *arguments], cwd=directory, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
            "-days", "2", "-subj", "/CN=kafka-conformance test CA")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "broker.key", "-out", "broker.csr",
            "-subj", "/CN=127.0.0.1")
    (directory / "san.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl("x509", "-req", "-in", "broker.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "broker.crt", "-days", "2", "-extfile", "san.cnf")
    openssl("pkcs8", "-topk8", "-nocrypt", "-in", "broker.key", "-out", "broker.pk8")
    bundle = directory / "broker.pem"
    bundle.write_text((directory / "broker.pk8").read_text() + (directory / "broker.crt").read_text())
    return directory / "ca.pem", bundle


@pytest.fixture(scope="module")
def secured_kafka(tmp_path_factory):
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make test certificates (.ci/run installs it)")
    ca, keystore = make_certificates(tmp_path_factory.mktemp("tls"))
    ports = {"SASL_PLAINTEXT": free_port(), "SSL": free_port()}
    broker = KafkaTarget("kafka", extra_listeners=ports, authorizer=False, overrides={
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "listener.name.ssl.ssl.keystore.type": "PEM",
        "listener.name.ssl.ssl.keystore.location": str(keystore),
    })
    broker.start()
    yield broker, ports, ca
    broker.stop()


def run_case(target: HostPortTarget, case_id: str = "commit-one-partition"):
    suites, errors = load_suites([ROOT / "suites" / "kip98" / "transactions.yaml"], components=bundled())
    assert errors == []
    case = next(case for case in suites[0].cases if case.id == case_id)
    runner = Runner(target, run_id="security-test", timeout=5.0)
    try:
        return runner.run(case, runner.case_versions(case)[-1])
    finally:
        runner.close()


@pytest.mark.kafka
@pytest.mark.broker
def test_sasl_plain_runs_a_case_and_keeps_the_password_out_of_the_transcript(secured_kafka):
    _, ports, _ = secured_kafka
    target = HostPortTarget(f"127.0.0.1:{ports['SASL_PLAINTEXT']}", security={
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
        "sasl.username": "alice", "sasl.password": "alice-secret"})
    result = run_case(target)
    assert result.outcome is Outcome.PASSED, result.message + result.rendered_transcript()[-2000:]
    assert "SaslAuthenticate" in result.rendered_transcript() and "alice-secret" not in str(result.transcript)


@pytest.mark.kafka
@pytest.mark.broker
def test_a_wrong_password_is_an_error_naming_the_failure(secured_kafka):
    _, ports, _ = secured_kafka
    target = HostPortTarget(f"127.0.0.1:{ports['SASL_PLAINTEXT']}", security={
        "security.protocol": "SASL_PLAINTEXT", "sasl.username": "alice", "sasl.password": "wrong"})
    result = run_case(target)
    assert result.outcome is Outcome.ERROR and "SASL_AUTHENTICATION_FAILED" in result.message


@pytest.mark.kafka
@pytest.mark.broker
def test_tls_with_the_brokers_ca_runs_a_case(secured_kafka):
    _, ports, ca = secured_kafka
    target = HostPortTarget(f"127.0.0.1:{ports['SSL']}", security={"security.protocol": "SSL",
                                                                  "ssl.ca.location": str(ca)})
    result = run_case(target)
    assert result.outcome is Outcome.PASSED, result.message + result.rendered_transcript()[-2000:]


@pytest.mark.kafka
@pytest.mark.broker
def test_tls_with_an_unknown_ca_is_an_error_naming_the_certificate(secured_kafka):
    _, ports, _ = secured_kafka
    target = HostPortTarget(f"127.0.0.1:{ports['SSL']}", security={"security.protocol": "SSL"})
    result = run_case(target)
    assert result.outcome is Outcome.ERROR and "certificate" in result.message.lower(), result.message


@pytest.mark.kafka
@pytest.mark.broker
def test_plaintext_on_a_tls_port_says_the_broker_speaks_tls(secured_kafka):
    _, ports, _ = secured_kafka
    result = run_case(HostPortTarget(f"127.0.0.1:{ports['SSL']}"))
    assert result.outcome is Outcome.ERROR and "speaks TLS" in result.message, result.message


def test_a_step_as_a_principal_is_skipped_where_the_target_has_none():
    from conformance.runner.context import Context, Skip

    context = Context(cluster=None, target=HostPortTarget("127.0.0.1:9"), version=None, api=None,
                            variables={}, topic_ids={})
    with pytest.raises(Skip, match="no principal 'guest'"):
        context.cluster_as("guest")
    assert context.cluster_as(None) is None  # the harness's own connections


def test_the_provisioned_kafka_names_its_principals_only():
    from conformance.targets.base import CapabilityMissing

    broker = KafkaTarget("kafka", extra_listeners={"SASL_PLAINTEXT": 9999})
    bootstrap, security = broker.principal("guest")
    assert bootstrap == "127.0.0.1:9999" and security.sasl_username == "guest" and not security.tls
    assert broker.principal("nobody")[1].sasl_username == "nobody"
    with pytest.raises(CapabilityMissing):
        broker.principal("admin")
    with pytest.raises(CapabilityMissing):
        KafkaTarget("kafka", authorizer=False).principal("guest")


def test_a_case_run_as_a_missing_principal_is_skipped_before_its_first_step():
    suites, errors = load_suites([ROOT / "suites" / "kip98" / "authorization.yaml"], components=bundled())
    assert errors == []
    granting = next(case for case in suites[0].cases if case.id == "init-transactional-id-authorized")
    runner = Runner(HostPortTarget("127.0.0.1:9"), run_id="principal-test")
    runner.advertised = lambda api: (0, 99)  # past the version gate; nothing listens on port 9
    result = runner.run(granting, 1)
    assert result.outcome is Outcome.SKIPPED and "no principal 'guest'" in result.message
    assert result.transcript == []  # the CreateAcls grant never went out
