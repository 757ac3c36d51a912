"""A proxy pipe with one emulation in it, and the frames it sends each way: the emulation tests' bench."""

from __future__ import annotations

from conformance.proxy.pipe import SEND, Pipe


def pipe_with(codec, emulation) -> Pipe:
    return Pipe(1, ("10.0.0.1", 9092), codec, [emulation], lambda host, port: ("127.0.0.1", 40000))


def sent(effects, to):
    return [effect.data[4:] for effect in effects if effect.kind == SEND and effect.to == to]
