"""The protocol core's own errors: decoding any bytes raises nothing else."""

from __future__ import annotations


class ProtocolError(Exception):
    """Base class of every error the protocol core raises on purpose."""


class SpecError(ProtocolError):
    """A message spec is malformed or refers to something unknown (names file and field)."""


class DecodeError(ProtocolError):
    """Bytes that do not decode; says where (byte offset, field path) and why."""

    def __init__(self, reason: str, offset: int = 0, path: str = ""):
        super().__init__(reason, offset, path)
        self.reason = reason
        self.offset = offset
        self.path = path

    def __str__(self) -> str:
        where = f"at byte {self.offset}" + (f" ({self.path})" if self.path else "")
        return f"{where}: {self.reason}"


class EncodeError(ProtocolError):
    """A value that cannot be encoded as its field's type at that version."""

    def __init__(self, reason: str, path: str = ""):
        super().__init__(reason, path)
        self.reason = reason
        self.path = path

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}" if self.path else self.reason
