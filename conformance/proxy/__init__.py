"""A Kafka-aware TCP proxy for fault injection and protocol interception.

``rules`` (which request a fault picks, what it does), ``interceptor`` (the extension point: what an
interceptor sees and may decide), ``addresses`` (advertised broker addresses rewritten) and ``pipe``
(one connection as a state machine) are sans-IO; ``server`` is the single-threaded socket layer.
Layering: this package uses protocol and client only; targets use it (``conformance.targets.proxied``).
"""
