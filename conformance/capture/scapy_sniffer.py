"""The fallback capture: scapy's ``L2Socket`` on loopback, read in a thread of this process.

scapy is GPL-2.0-only, so it is an optional extra (``pip install 'kafka-conformance[capture]'``)
and imported only here. What the tooling notes found on ``lo`` shapes this module:

- ``L2Socket`` (not ``L2ListenSocket``) drops the outgoing copy of each packet, which the
  listen socket would capture a second time;
- loopback packets reach 65549 bytes, so reads are 262144 bytes, and the receive buffer is
  forced to 64 MiB past ``net.core.rmem_max`` (the default buffer silently dropped most of a
  4 MiB transfer);
- packets are written raw by our own writer: no dissection, and no 65535-byte snaplen.

The capture filter runs in the kernel when libpcap is installed, compiled here with a 262144
snap length: scapy's own ``attach_filter`` compiles with 65535, and a BPF program's return
value is the snap length, so the kernel would cut every large loopback packet. Without
libpcap, packets are filtered in Python, which costs more of the harness's time.
"""

from __future__ import annotations

import ctypes.util
import logging
import select
import socket
import threading
from pathlib import Path
from typing import Any

from .tcp import ETHERNET, parse_segment
from .writer import PcapWriter

BUFFER_BYTES = 64 << 20
READ_BYTES = 262144
SO_RCVBUFFORCE = 33


def availability() -> str | None:
    try:
        import scapy  # noqa: F401
    except ImportError:
        return "scapy is not installed (pip install 'kafka-conformance[capture]')"
    try:
        socket.socket(socket.AF_PACKET, socket.SOCK_RAW).close()
    except PermissionError:
        return "no permission to open packet sockets (run as root or grant CAP_NET_RAW)"
    except (OSError, AttributeError) as error:
        return f"packet sockets are unavailable: {error}"
    return None


def libpcap_available() -> bool:
    return ctypes.util.find_library("pcap") is not None


class ScapySniffer:
    def __init__(self, capture_filter: str, ports: list[int], marker_port: int, path: Path):
        self.capture_filter, self.ports, self.marker_port, self.path = capture_filter, set(ports), marker_port, path
        self.dropped: int | None = None
        self._seen: set[bytes] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._socket: Any = None  # scapy's L2Socket, imported only in start()
        self._writer: Any = None
        self._failure: str | None = None

    def start(self) -> None:
        from scapy.arch.linux import L2Socket
        from scapy.config import conf

        conf.bufsize = BUFFER_BYTES  # read by L2Socket's constructor
        kernel_filter = libpcap_available()
        runtime_log = logging.getLogger("scapy.runtime")
        level = runtime_log.level
        runtime_log.setLevel(logging.ERROR)  # it warns that lo's link type is not Ethernet; we never dissect
        try:
            self._socket = L2Socket(iface="lo")
        finally:
            runtime_log.setLevel(level)
        if kernel_filter:
            _attach_filter(self._socket.ins, self.capture_filter)
        try:
            self._socket.ins.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, BUFFER_BYTES)
        except OSError:  # without CAP_NET_ADMIN the buffer stays at rmem_max
            pass
        self._writer = PcapWriter(self.path, ETHERNET, format="pcap" if self.path.suffix == ".pcap" else "pcapng",
                                  nanoseconds=True)
        self._thread = threading.Thread(target=self._run, args=(not kernel_filter,), name="capture", daemon=True)
        self._thread.start()

    def _run(self, filter_here: bool) -> None:
        try:
            while not self._stop.is_set():
                readable, _, _ = select.select([self._socket.ins], [], [], 0.05)
                if readable:
                    self._read(filter_here)
        except Exception as error:  # noqa: BLE001 - reported by stop()
            self._failure = f"capture thread failed: {type(error).__name__}: {error}"

    def _read(self, filter_here: bool) -> None:
        _, data, timestamp = self._socket.recv_raw(READ_BYTES)
        if data is None:  # the outgoing copy of a loopback packet
            return
        marker = data.find(b"kafka-conformance-capture-marker:")
        if marker >= 0:
            self._seen.add(data[marker:])
        elif filter_here:
            segment = parse_segment(ETHERNET, data)
            if segment is None or not {segment[1], segment[3]} & self.ports:
                return
        self._writer.write(timestamp, data)

    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def ready(self) -> bool:
        return self.running()  # the socket was bound and filtered before the thread started

    def has_seen(self, nonce: bytes) -> bool:
        return nonce in self._seen

    def stop(self) -> str | None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        if self._socket is not None:
            self._socket.close()
        if self._writer is not None:
            self._writer.close()
        return self._failure


def _attach_filter(sock: socket.socket, expression: str) -> None:
    """Compile ``expression`` for Ethernet with our snap length and attach it to ``sock``."""
    import ctypes

    from scapy.arch.linux import SO_ATTACH_FILTER
    from scapy.data import DLT_EN10MB
    from scapy.libs.structures import bpf_program, sock_fprog
    from scapy.libs.winpcapy import pcap_close, pcap_compile, pcap_freecode, pcap_geterr, pcap_open_dead

    handle = pcap_open_dead(DLT_EN10MB, READ_BYTES)
    program = bpf_program()
    try:
        if pcap_compile(handle, ctypes.byref(program), expression.encode(), 1, -1) == -1:
            raise ValueError(f"capture filter {expression!r}: {pcap_geterr(handle).decode(errors='replace')}")
        sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, sock_fprog(program.bf_len, program.bf_insns))
        pcap_freecode(ctypes.byref(program))
    finally:
        pcap_close(handle)
