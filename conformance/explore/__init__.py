"""Exploration: generated histories of transaction-protocol requests, every answer judged by a model of the KIPs.

- :mod:`.rules`: the model's rules, one row each, with the KIP sentence it rests on;
- :mod:`.ops`: the operations a history is made of, and the wire requests they become (sans-IO);
- :mod:`.model`: the reference model, which says for each operation which answers the KIPs allow and
  checks the invariants after every step (no I/O: it is tested on its own);
- :mod:`.driver`: a hypothesis state machine that sends the operations to a target through the harness's
  client and lets hypothesis shrink a departing history;
- :mod:`.cases`: a departing history written as a suite file that ``conformance run`` reproduces;
- :mod:`.exploration`: an exploration with a budget, its console progress and its results lines;
- :mod:`.fanout`: several seeds at once, in worker processes or as Spark tasks, departures merged.
"""
