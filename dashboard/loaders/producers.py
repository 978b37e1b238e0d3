"""Files of other profilers, named with the producer and what to use instead (never "a gzip file that
is not a PyTorch profiler trace"): told apart by their first (decompressed) bytes.

* rocprofv3 (ROCprofiler-SDK) JSON: an object whose records sit under ``"rocprofiler-sdk-tool"``
  (``metadata``, ``agents``, ``kernel_symbols``, ``buffer_records.kernel_dispatch``, ...).
* JAX / TensorFlow profiler XPlane (``*.xplane.pb``): a serialised ``XSpace`` protobuf, whose first
  field is ``planes`` (tag byte 0x0A) named ``/host:CPU``, ``/device:GPU:0``, ``/device:TPU:0``, ...
* speedscope JSON (what ``py-spy record --format speedscope`` writes): ``"$schema"`` naming speedscope.
"""

from __future__ import annotations

__all__ = ["other_producer_message"]

XPLANE_SUFFIX = ".xplane.pb"
_XPLANE_NAMES = (b"/host:", b"/device:")


def _is_xplane(name: str, head: bytes) -> bool:
    """By name, or by content: field 1 (``planes``, length-delimited: 0x0A), a varint length, then the
    plane's own first field (``id`` 0x08 or ``name`` 0x12), and a plane name in the first 4 KiB."""
    if name.lower().endswith(XPLANE_SUFFIX):
        return True
    if head[:1] != b"\x0a":
        return False
    i = 1
    while i < min(len(head), 11) and head[i] & 0x80:  # the varint's continuation bytes
        i += 1
    return head[i + 1 : i + 2] in (b"\x08", b"\x12") and any(n in head[:4096] for n in _XPLANE_NAMES)


def other_producer_message(name: str, head: bytes) -> str | None:
    """The refusal of a file written by another profiler (``head``: its first bytes, decompressed for a
    gzip file), naming the producer and what to record or convert instead; None when it is none of them."""
    text = head[: 1 << 20]
    if b'"rocprofiler-sdk-tool"' in text:
        return (
            f"{name}: a rocprofv3 (ROCprofiler-SDK) JSON ('rocprofiler-sdk-tool' records), not a format tracedash "
            "reads: record the run with the PyTorch profiler on ROCm instead (torch.profiler writes a Kineto trace "
            "with the HIP kernels and runtime calls, which tracedash reads); rocprofv3's own output opens in "
            "Perfetto (rocprofv3 --output-format pftrace)"
        )
    if _is_xplane(name, text):
        return (
            f"{name}: a JAX/TensorFlow profiler XPlane (XSpace protobuf, .xplane.pb), not a format tracedash "
            "reads: on NVIDIA GPUs record the JAX run under Nsight Systems (nsys profile --trace=cuda,nvtx python "
            "...) and open its SQLite export (nsys export --type sqlite REPORT.nsys-rep); the XPlane itself opens "
            "in TensorBoard's or XProf's trace viewer"
        )
    if b'"$schema"' in text[:4096] and b"speedscope" in text[:4096]:
        return (
            f"{name}: a speedscope profile (e.g. py-spy record --format speedscope): CPU stack samples, not a GPU "
            "trace; tracedash reads nsys exports and PyTorch profiler (Kineto) traces"
        )
    return None
