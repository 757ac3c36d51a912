"""``kafka,two.phase.commit=true``: the broker settings KIP-939's two-phase commit needs on Kafka 4.x;
``kafka:3.9.2,consumer.groups=true``: KIP-848's consumer groups where 3.7 to 3.9 had them as a preview (no broker)."""

from __future__ import annotations

import pytest

from conformance.targets.kafka.broker import KafkaTarget, kafka_target_kind

TWO_PC = {"unstable.api.versions.enable": "true", "transaction.two.phase.commit.enable": "true"}


def test_two_phase_commit_option_turns_on_unstable_versions_and_2pc():
    assert kafka_target_kind().matches("kafka,two.phase.commit=true")
    target = KafkaTarget("kafka:4.4.0,two.phase.commit=true,transaction.version=2")
    assert {name: target.overrides[name] for name in TWO_PC} == TWO_PC
    assert target.features == {"transaction.version": 2}


def test_two_phase_commit_false_sets_nothing():
    assert not set(TWO_PC) & set(KafkaTarget("kafka,two.phase.commit=false").overrides)


def test_explicit_overrides_win_over_the_option():
    target = KafkaTarget("kafka,two.phase.commit=true", overrides={"transaction.two.phase.commit.enable": False})
    assert target.overrides["transaction.two.phase.commit.enable"] == "false"
    assert target.overrides["unstable.api.versions.enable"] == "true"


@pytest.mark.parametrize("value", ["yes", "1", "on"])
def test_two_phase_commit_takes_only_a_boolean(value):
    with pytest.raises(ValueError, match="true or false"):
        KafkaTarget(f"kafka,two.phase.commit={value}")


def test_consumer_groups_option_turns_on_the_consumer_protocol_and_the_new_coordinator():
    target = KafkaTarget("kafka:3.9.2,consumer.groups=true")
    assert target.overrides["group.coordinator.rebalance.protocols"] == "classic,consumer"
    assert target.overrides["group.coordinator.new.enable"] == "true"
    assert "group.coordinator.rebalance.protocols" not in KafkaTarget("kafka:3.9.2").overrides
