"""The exactly-once tier: real clients run against a target while faults happen; their history is checked.

``history`` records what every client did and saw (sans-IO); ``checks`` judges a history against the
guarantees KIP-98 and KIP-447 give (sans-IO, so every anomaly class is unit-tested on hand-made
histories); ``workload`` drives confluent-kafka's transactional producer, a consume-transform-produce
loop and read_committed readers; ``nemesis`` picks the faults a target can take; ``eos_run`` ties them
together for one target and turns each check into a result line of the suites' own JSONL format.
"""
