"""``--principal``: the authorization cases' principals on a HOST:PORT target, with no broker.

Each principal's client config is read and checked before anything runs, and its Kafka principal found
(a ``principal`` key, or the SASL user name); a bad one is one line, exit code 2, with no secret. The
ACLs a case grants name that principal, and the harness deletes exactly those after the case.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from conformance.cli import main
from conformance.targets.principals import PrincipalConfigError, read_principals
from conformance.cli.run_options import pytest_options
from conformance.runner.context import Skip
from conformance.runner.steps import send as send_kind
from conformance.runner.runner import remove_acls
from conformance.targets.base import CapabilityMissing
from conformance.targets.certificates import Authority
from conformance.targets.hostport import HostPortTarget
from conformance.targets.proxied import ProxiedTarget

SECRET = "s3cr3t-PR1NC1PAL"


def write(folder, name: str, settings: dict[str, str]):
    path = folder / name
    path.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
    return path


def scram(user: str) -> dict[str, str]:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": user,
            "sasl.password": SECRET}


def refused(options: list[str], base) -> str:
    with pytest.raises(PrincipalConfigError) as caught:
        read_principals(options, base)
    message = str(caught.value)
    assert "\n" not in message and SECRET not in message
    return message


# ------------------------------------------------------------------------------ reading
def test_a_sasl_principal_is_the_user_name_unless_the_file_says_otherwise(tmp_path):
    write(tmp_path, "guest.properties", scram("alice"))
    write(tmp_path, "nobody.properties", {**scram("bob"), "principal": "User:CN=bob,O=example"})
    found = read_principals(["guest=guest.properties", "nobody=nobody.properties"], tmp_path)
    assert {name: principal.kafka_principal for name, principal in found.items()} == {
        "guest": "User:alice", "nobody": "User:CN=bob,O=example"}
    assert found["guest"].security.sasl_username == "alice" and found["guest"].security.mechanism == "SCRAM-SHA-512"
    assert SECRET not in repr(found)


def test_the_java_clients_jaas_line_names_the_user_too(tmp_path):
    write(tmp_path, "guest.properties", {
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": f'org.apache.kafka.common.security.plain.PlainLoginModule required username="carol" '
                            f'password="{SECRET}";'})
    assert read_principals(["guest=guest.properties"], tmp_path)["guest"].kafka_principal == "User:carol"


def test_a_client_certificate_or_a_token_needs_the_principal_key(tmp_path):
    authority = Authority(tmp_path / "tls")
    issued = authority.issue("guest", "guest")
    tls = {"security.protocol": "SSL", "ssl.ca.location": str(authority.path),
           "ssl.certificate.location": str(issued.certificate), "ssl.key.location": str(issued.key)}
    write(tmp_path, "cert.properties", tls)
    message = refused(["guest=cert.properties"], tmp_path)
    assert message.startswith("--principal guest (cert.properties): add principal=User:...")
    assert "ssl.principal.mapping.rules" in message
    write(tmp_path, "cert-named.properties", {**tls, "principal": "User:guest"})
    assert read_principals(["guest=cert-named.properties"], tmp_path)["guest"].kafka_principal == "User:guest"

    write(tmp_path, "oauth.properties", {
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.client.id": "app",
        "sasl.oauthbearer.client.secret": SECRET, "sasl.oauthbearer.token.endpoint.url": "http://127.0.0.1:1/t"})
    assert "OAUTHBEARER" in refused(["nobody=oauth.properties"], tmp_path)
    write(tmp_path, "plain.properties", {"security.protocol": "PLAINTEXT"})
    assert "User:ANONYMOUS" in refused(["nobody=plain.properties"], tmp_path)


def test_bad_inputs_are_one_line_naming_the_file(tmp_path):
    (tmp_path / "broken.properties").write_text(f"security.protocol=SASL_SSL\nsasl.password {SECRET}\n")
    assert refused(["guest=broken.properties"], tmp_path) == "--principal guest=broken.properties: line 2: " \
                                                            "expected key=value"
    assert refused(["guest=missing.properties"], tmp_path) == "--principal guest=missing.properties: no such file"
    assert "no such file" in refused(["principals.yaml"], tmp_path)
    assert "a principal's name" in refused(["bad name=x.properties"], tmp_path)
    write(tmp_path, "bad-principal.properties", {**scram("alice"), "principal": "alice"})
    assert "principal must be TYPE:NAME" in refused(["guest=bad-principal.properties"], tmp_path)
    write(tmp_path, "gssapi.properties", {**scram("alice"), "sasl.mechanism": "GSSAPI"})
    assert "sasl.mechanism: the raw client speaks" in refused(["guest=gssapi.properties"], tmp_path)
    write(tmp_path, "same.properties", scram("alice"))
    write(tmp_path, "again.properties", scram("alice"))
    assert "both User:alice" in refused(["guest=same.properties", "nobody=again.properties"], tmp_path)
    assert "given twice" in refused(["guest=same.properties", "guest=again.properties"], tmp_path)
    # a client config given where a mapping is expected: the fix is named
    assert "name the principal it is for (--principal guest=same.properties)" in refused(["same.properties"],
                                                                                          tmp_path)


def test_one_yaml_or_properties_file_maps_names_to_configs(tmp_path):
    folder = tmp_path / "configs"
    folder.mkdir()
    write(folder, "guest.properties", scram("alice"))
    (folder / "principals.yaml").write_text(
        "principals:\n  guest: guest.properties\n"
        f"  nobody: {{security.protocol: SASL_PLAINTEXT, sasl.mechanism: PLAIN, sasl.username: bob, "
        f"sasl.password: {SECRET}}}\n")
    found = read_principals(["configs/principals.yaml"], tmp_path)
    assert {name: principal.kafka_principal for name, principal in found.items()} == {
        "guest": "User:alice", "nobody": "User:bob"}
    write(folder, "principals.properties", {"guest": "guest.properties", "nobody.security.protocol": "SASL_PLAINTEXT",
                                            "nobody.sasl.username": "bob", "nobody.sasl.password": SECRET})
    found = read_principals(["configs/principals.properties"], tmp_path)
    assert found["nobody"].kafka_principal == "User:bob" and found["nobody"].security.mechanism == "PLAIN"
    (folder / "broken.yaml").write_text("guest: [unclosed\n")
    assert refused(["configs/broken.yaml"], tmp_path).startswith("configs/broken.yaml: not valid YAML")
    (folder / "empty.yaml").write_text("{}\n")
    assert "names no principal" in refused(["configs/empty.yaml"], tmp_path)
    (folder / "missing.yaml").write_text("guest: nowhere.properties\n")
    assert refused(["configs/missing.yaml"], tmp_path) == \
        "--principal configs/missing.yaml: guest: nowhere.properties: no such file"


# ------------------------------------------------------------------------------ the commands
@pytest.mark.parametrize("command", ["run", "flaky"])
def test_conformance_run_and_flaky_end_a_bad_principal_in_one_line_with_exit_code_2(command, tmp_path,
                                                                                        monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "guest.properties", {"security.protocol": "SSL", "ssl.certificate.location": "c.pem",
                                         "ssl.key.location": "k.pem", "ssl.key.password": SECRET})
    extra = ["--runs", "2"] if command == "flaky" else []
    code = main([command, "--target", "127.0.0.1:9", "--principal", "guest=guest.properties",
                 "--results", str(tmp_path / "r.jsonl"), *extra])
    printed = capsys.readouterr()
    assert code == 2
    lines = printed.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"conformance {command}: --principal guest (guest.properties): ")
    assert SECRET not in printed.out + printed.err
    assert not (tmp_path / "r.jsonl").exists()  # nothing ran


def test_run_options_hand_every_principal_to_pytest():
    arguments = SimpleNamespace(results="r.jsonl", target=["127.0.0.1:9092"], paths=[], strict=False, drafts=False,
                                transcripts="failures", client_config="admin.properties", alluredir="",
                                principal=["guest=g.properties", "nobody=n.properties"])
    options = pytest_options(arguments, "run-1")
    assert options[options.index("--client-config=admin.properties"):][:3] == [
        "--client-config=admin.properties", "--principal=guest=g.properties", "--principal=nobody=n.properties"]


# ------------------------------------------------------------------------------ the target and the steps
def test_a_host_port_target_connects_as_each_named_principal(tmp_path):
    target = HostPortTarget("127.0.0.1:9092")
    with pytest.raises(CapabilityMissing, match=r"has no principal 'guest': name its client config with "
                                                r"--principal guest=FILE"):
        target.principal("guest")
    assert target.kafka_principal("guest") is None
    write(tmp_path, "guest.properties", scram("alice"))
    target.configure(principals=read_principals(["guest=guest.properties"], tmp_path))
    bootstrap, security = target.principal("guest")
    assert (bootstrap, security.sasl_username) == ("127.0.0.1:9092", "alice")
    assert target.kafka_principal("guest") == "User:alice" and target.kafka_principal("nobody") is None
    proxied = ProxiedTarget("proxy+127.0.0.1:9092", target)
    assert proxied.kafka_principal("guest") == "User:alice"
    proxied.configure(principals={})  # the proxy hands the principals to the target behind it
    assert target.kafka_principal("guest") is None


def test_only_a_target_the_harness_attaches_to_takes_a_client_config_or_principals():
    from conformance.targets.base import Capability
    from conformance.targets.kafka.broker import KafkaTarget

    provisioned = KafkaTarget("kafka")
    assert Capability.CONFIGURE not in provisioned.capabilities
    with pytest.raises(CapabilityMissing, match="takes no client config or principals"):
        provisioned.configure(client_config={"security.protocol": "SSL"})
    attached = HostPortTarget("127.0.0.1:9092")
    assert Capability.CONFIGURE in attached.capabilities
    attached.configure(client_config={"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                                      "sasl.username": "alice", "sasl.password": "secret"})
    assert attached.security.sasl_username == "alice" and attached.client_config()["sasl.username"] == "alice"


def context_for(target, api=None) -> SimpleNamespace:
    return SimpleNamespace(target=target, api=api, lock=threading.RLock(), acls=[])


def test_acl_requests_name_the_principal_the_target_maps_and_created_bindings_are_remembered(tmp_path):
    target = HostPortTarget("127.0.0.1:9092")
    write(tmp_path, "guest.properties", scram("alice"))
    target.configure(principals=read_principals(["guest=guest.properties"], tmp_path))
    context = context_for(target)
    creation = {"resource_type": 5, "resource_name": "txn", "resource_pattern_type": 3, "principal": "User:guest",
                "host": "*", "operation": 4, "permission_type": 3}
    fields = send_kind.acl_principals(context, "CreateAcls", {"creations": [creation, {**creation,
                                                                                 "principal": "User:other"}]})
    assert [entry["principal"] for entry in fields["creations"]] == ["User:alice", "User:other"]
    assert creation["principal"] == "User:guest"  # the suite's own values are left alone
    send_kind.acls_created(context, {}, fields, {"results": [{"error_code": 0}, {"error_code": 0}]})
    assert [acl["principal"] for acl in context.acls] == ["User:alice", "User:other"]


@pytest.mark.parametrize("error, says", [(31, "the harness's own principal may not create ACLs (it needs ALTER on "
                                               "the CLUSTER resource) (CreateAcls: CLUSTER_AUTHORIZATION_FAILED)"),
                                         (54, "the broker has no authorizer, so there are no rights to grant "
                                              "(CreateAcls: SECURITY_DISABLED)")])
def test_a_harness_that_may_not_grant_rights_skips_the_case_saying_why(error, says):
    context = context_for(HostPortTarget("127.0.0.1:9092"))
    fields = {"creations": [{"principal": "User:alice", "resource_type": 5}]}
    with pytest.raises(Skip) as skipped:
        send_kind.acls_created(context, {}, fields, {"results": [{"error_code": error}]})
    assert str(skipped.value) == f"127.0.0.1:9092: cannot grant User:alice the rights this case needs: {says}"
    # unless CreateAcls is what the case tests, or a principal sent it: then it is the step's expectation's business
    send_kind.acls_created(context_for(context.target, api="CreateAcls"), {}, fields, {"results": [{"error_code": error}]})
    send_kind.acls_created(context, {"as": "guest"}, fields, {"results": [{"error_code": error}]})
    assert context.acls == []


class FakeCluster:
    def __init__(self):
        self.sent = []

    def best_version(self, api):
        return 3

    def connection(self):
        return self

    def request(self, api, version, body, **options):
        self.sent.append((api, version, body, options["step"]))


def test_the_acls_a_case_created_are_deleted_exactly_after_it():
    cluster = FakeCluster()
    created = [{"resource_type": 5, "resource_name": "txn", "resource_pattern_type": 3, "principal": "User:alice",
                "host": "*", "operation": 4, "permission_type": 3}]
    remove_acls(cluster, created)
    assert cluster.sent == [("DeleteAcls", 3, {"filters": [{
        "resource_type_filter": 5, "resource_name_filter": "txn", "pattern_type_filter": 3,
        "principal_filter": "User:alice", "host_filter": "*", "operation": 4, "permission_type": 3}]}, "cleanup")]
    assert created == []
    remove_acls(cluster, created)  # nothing created: nothing sent
    assert len(cluster.sent) == 1


def test_a_broker_without_an_authorizer_skips_the_principals_cases_once_asked():
    from conformance.runner.runner import Runner

    class Answers(FakeCluster):
        error = 54  # SECURITY_DISABLED

        def version_range(self, api):
            return (1, 3)

        def request(self, api, version, body, **options):
            super().request(api, version, body, **options)
            answer = {"error_code": self.error, "resources": []}
            return SimpleNamespace(response=answer, answer=answer)

    runner = Runner(HostPortTarget("127.0.0.1:9092"), run_id="probe")
    cluster = Answers()
    for _ in range(2):
        with pytest.raises(Skip, match=r"127.0.0.1:9092 has no authorizer \(DescribeAcls: SECURITY_DISABLED\)"):
            runner._check_authorizer(cluster)
    assert [api for api, *_ in cluster.sent] == ["DescribeAcls"]  # asked once per target
    refused = Answers()
    refused.error = 31  # the harness may not describe ACLs: not a reason to skip, the cases find out
    runner = Runner(HostPortTarget("127.0.0.1:9092"), run_id="probe")
    runner._check_authorizer(refused)


@pytest.mark.parametrize("options, principal", [({"security": "SSL", "ssl.client.auth": "required"}, "explicit"),
                                                ({"security": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256"}, "derived")])
def test_the_provisioned_secured_kafka_writes_what_principal_takes(tmp_path, options, principal):
    from conformance.targets.kafka.security import SecuredListener

    listener = SecuredListener.from_options("kafka", options)
    listener.prepare(tmp_path / "tls")
    listener.write_client_properties("127.0.0.1:9093")
    files = [f"guest={tmp_path / 'client-guest.properties'}", f"nobody={tmp_path / 'client-nobody.properties'}"]
    found = read_principals(files, tmp_path)
    assert {name: found[name].kafka_principal for name in found} == {"guest": "User:guest", "nobody": "User:nobody"}
    assert ("principal=User:guest" in (tmp_path / "client-guest.properties").read_text()) == (principal == "explicit")
