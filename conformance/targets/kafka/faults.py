"""The node faults, generic to any cluster, are in :mod:`conformance.targets.nodes`; importable here as before."""

from ..nodes import FAULTS, LEADERSHIP_FAULTS, NODE_FAULTS, Node, NodeFaults, java_hash, partition_for
from .cluster_target import DATA_DIRECTORIES

__all__ = ["DATA_DIRECTORIES", "FAULTS", "LEADERSHIP_FAULTS", "NODE_FAULTS", "Node", "NodeFaults", "java_hash",
           "partition_for"]
