"""ctypes bindings to the librdkafka bundled in the confluent-kafka wheel, limited to its mock cluster.

The Python package exposes no mock-cluster API, but its shared object exports the C one
(``rdkafka_mock.h``). That header is experimental and outside librdkafka's ABI guarantees, so the
signatures below are checked against librdkafka 2.16 and confluent-kafka is pinned to 2.16.*.
"""

from __future__ import annotations

import ctypes
import glob
import os
from ctypes import POINTER, c_char_p, c_int, c_int16, c_int32, c_size_t, c_void_p
from functools import lru_cache

# Opaque handles: only ever passed back to librdkafka.
rd_kafka_t_p = c_void_p
rd_kafka_conf_t_p = c_void_p
rd_kafka_mock_cluster_t_p = c_void_p
rd_kafka_mock_request_t_p = c_void_p
rd_kafka_resp_err_t = c_int  # a C enum

RD_KAFKA_PRODUCER = 0
RD_KAFKA_CONF_OK = 0

# name: (restype, argtypes). Variadic functions are deliberately absent: ctypes cannot type them
# safely, and each has an array or fixed-argument twin.
_SIGNATURES = {
    "rd_kafka_version_str": (c_char_p, []),
    "rd_kafka_err2name": (c_char_p, [rd_kafka_resp_err_t]),
    "rd_kafka_conf_new": (rd_kafka_conf_t_p, []),
    "rd_kafka_conf_destroy": (None, [rd_kafka_conf_t_p]),
    "rd_kafka_conf_set": (c_int, [rd_kafka_conf_t_p, c_char_p, c_char_p, c_char_p, c_size_t]),
    "rd_kafka_new": (rd_kafka_t_p, [c_int, rd_kafka_conf_t_p, c_char_p, c_size_t]),
    "rd_kafka_destroy": (None, [rd_kafka_t_p]),
    "rd_kafka_mock_cluster_new": (rd_kafka_mock_cluster_t_p, [rd_kafka_t_p, c_int]),
    "rd_kafka_mock_cluster_destroy": (None, [rd_kafka_mock_cluster_t_p]),
    "rd_kafka_mock_cluster_bootstraps": (c_char_p, [rd_kafka_mock_cluster_t_p]),
    "rd_kafka_mock_clear_request_errors": (None, [rd_kafka_mock_cluster_t_p, c_int16]),
    "rd_kafka_mock_push_request_errors_array": (
        None,
        [rd_kafka_mock_cluster_t_p, c_int16, c_size_t, POINTER(rd_kafka_resp_err_t)],
    ),
    "rd_kafka_mock_topic_create": (rd_kafka_resp_err_t, [rd_kafka_mock_cluster_t_p, c_char_p, c_int, c_int]),
    "rd_kafka_mock_broker_set_down": (rd_kafka_resp_err_t, [rd_kafka_mock_cluster_t_p, c_int32]),
    "rd_kafka_mock_broker_set_up": (rd_kafka_resp_err_t, [rd_kafka_mock_cluster_t_p, c_int32]),
    "rd_kafka_mock_broker_set_rtt": (rd_kafka_resp_err_t, [rd_kafka_mock_cluster_t_p, c_int32, c_int]),
    "rd_kafka_mock_coordinator_set": (
        rd_kafka_resp_err_t,
        [rd_kafka_mock_cluster_t_p, c_char_p, c_char_p, c_int32],
    ),
    "rd_kafka_mock_set_apiversion": (
        rd_kafka_resp_err_t,
        [rd_kafka_mock_cluster_t_p, c_int16, c_int16, c_int16],
    ),
    "rd_kafka_mock_start_request_tracking": (None, [rd_kafka_mock_cluster_t_p]),
    "rd_kafka_mock_get_requests": (
        POINTER(rd_kafka_mock_request_t_p),
        [rd_kafka_mock_cluster_t_p, POINTER(c_size_t)],
    ),
    "rd_kafka_mock_request_id": (c_int32, [rd_kafka_mock_request_t_p]),
    "rd_kafka_mock_request_api_key": (c_int16, [rd_kafka_mock_request_t_p]),
    # Frees each request and the array itself.
    "rd_kafka_mock_request_destroy_array": (None, [POINTER(rd_kafka_mock_request_t_p), c_size_t]),
}


class LibrdkafkaMissing(RuntimeError):
    """The bundled librdkafka cannot be found or lacks the mock-cluster functions."""


def bundled_library_path() -> str:
    """Path of the librdkafka shared object shipped inside the confluent-kafka wheel."""
    try:
        import confluent_kafka
    except ImportError as exc:
        raise LibrdkafkaMissing(f"confluent-kafka is not installed ({exc})") from exc
    package_dir = os.path.dirname(confluent_kafka.__file__)
    # auditwheel puts vendored libraries beside the package; older wheels used a .libs folder inside it.
    patterns = [
        os.path.join(os.path.dirname(package_dir), "confluent_kafka.libs", "librdkafka*.so*"),
        os.path.join(package_dir, ".libs", "librdkafka*.so*"),
    ]
    for pattern in patterns:
        found = sorted(glob.glob(pattern))
        if found:
            return found[0]
    raise LibrdkafkaMissing(
        "no bundled librdkafka*.so* next to confluent_kafka (a wheel built against a system "
        f"librdkafka has none); looked in {', '.join(os.path.dirname(p) for p in patterns)}"
    )


@lru_cache(maxsize=1)
def load() -> ctypes.CDLL:
    """Load the bundled librdkafka once, with every function used here fully typed."""
    path = bundled_library_path()
    try:
        lib = ctypes.CDLL(path)
    except OSError as exc:
        raise LibrdkafkaMissing(f"cannot load {path}: {exc}") from exc
    for name, (restype, argtypes) in _SIGNATURES.items():
        try:
            function = getattr(lib, name)
        except AttributeError as exc:
            raise LibrdkafkaMissing(f"{path} does not export {name}") from exc
        function.restype = restype
        function.argtypes = argtypes
    return lib


def error_name(code: int) -> str:
    """librdkafka's name for an error code, e.g. ``_UNKNOWN_BROKER`` or ``NOT_COORDINATOR``."""
    raw = load().rd_kafka_err2name(code)
    return raw.decode() if raw else str(code)
