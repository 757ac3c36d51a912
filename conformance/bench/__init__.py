"""Benchmarks of the harness's own machinery (``python -m conformance.bench codec``)."""
