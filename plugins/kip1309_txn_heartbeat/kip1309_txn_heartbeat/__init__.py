"""Draft KIP-1309 as a kafka-conformance plugin: how a KIP author tests a proposal before the vote."""
