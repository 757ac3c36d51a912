"""Markers of the harness's own tests."""


def pytest_configure(config):
    config.addinivalue_line("markers", "kafka: starts a real Apache Kafka broker (needs java, and mvn or cached jars)")
