"""KIP-447 as first drafted (group-aware InitProducerId) as a kafka-conformance plugin."""
