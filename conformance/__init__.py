"""kafka-conformance: a conformance harness for Apache Kafka's transaction protocol.

PYTEST_DONT_REWRITE: ``conformance run`` imports this package before it starts pytest, which then finds
it among its plugins' packages (entry point ``pytest11``) and would warn that it cannot rewrite it.
"""

__version__ = "0.1.0"
