"""Apache Kafka as a target: a broker or a KRaft cluster the harness provisions from a release's jars.

``broker`` one node, ``cluster`` three or more (the faults the cluster suites use are :mod:`conformance.targets.nodes`,
for any cluster; ``faults`` keeps their old names importable), ``config`` the
server properties, ``jars`` fetching a release, ``releases`` the release matrix, ``security`` secured
listeners, ``known_issues`` a release's known bugs, ``disks``, ``cds`` and ``preview`` smaller parts.
"""
