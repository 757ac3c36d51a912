"""Wire captures of a target's traffic, decoded back into Kafka exchanges, and diffs between runs.

Capture (needs root or CAP_NET_RAW; dumpcap from the tshark package, else scapy):
    :mod:`.sniffer` (``Capture``, ``capture_available``), :mod:`.scapy_sniffer`
Reading captures (no privilege, no scapy):
    :mod:`.pcap` (files; ``read_capture``), :mod:`.tcp` (headers, reassembly),
    :mod:`.kafka_stream` (frames, pairing, decoding), :mod:`.wire` (the model)
Comparing runs:
    :mod:`.loaders` (captures or results files), :mod:`.normalise` (rules), :mod:`.diff`,
    :mod:`.render` (text, JSON), :mod:`.html_report`
Also: :mod:`.commands` (what ``conformance decode`` / ``diff`` do, as functions), :mod:`.scenario` (a real
client's transactions), :mod:`.tshark` (cross-check), :mod:`.writer` (made-up captures); the decode
benchmark is ``conformance.bench.capture``.

scapy is GPL-2.0-only: only :mod:`.scapy_sniffer` imports it, and only when dumpcap is missing.
"""
