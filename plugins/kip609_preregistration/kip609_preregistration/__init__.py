"""Draft KIP-609 (pre-registration and blocking calls) as a kafka-conformance plugin."""
