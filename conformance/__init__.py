"""kafka-conformance: a conformance harness for Apache Kafka's transaction protocol."""

__version__ = "0.1.0"
