"""Brokers to test: start or attach to them, inject faults, stop them."""

from .base import CapabilityMissing, Target, TargetInfo, TargetUnavailable
from .registry import TargetKind, resolve

__all__ = ["CapabilityMissing", "Target", "TargetInfo", "TargetKind", "TargetUnavailable", "resolve"]
