"""What each Kineto event category is, and what a producer may write for it.

The categories PyTorch's profiler writes (current and PyTorch <= 1.13 names), those of accelerators
tracedash does not analyse, the kinds of ``TraceMeta.accounts`` this loader fills and the rules under
which an event is skipped. Category names of PyTorch <= 1.13 (``Kernel``, ``Runtime``, ``Memcpy``,
``Memset``, ``Operator``, ``Python``, ``Memory``, flow ``async_gpu``; see ``LEGACY_CATEGORIES``) are read
as their current names; ``meta.tables`` keeps the names as written.
"""

from __future__ import annotations

import re

from dashboard.model import NOT_SHOWN_KIND

FORMAT = "kineto-json"

KERNEL_CAT = "kernel"
KERNEL_CATS = frozenset({KERNEL_CAT})
MEMCPY_CAT = "gpu_memcpy"
MEMSET_CAT = "gpu_memset"
API_EVENT_CLASS = {"cuda_runtime": 0, "hip_runtime": 0, "cuda_driver": 1, "hip_driver": 1}
RANGE_CAT = "user_annotation"
GPU_RANGE_CAT = "gpu_user_annotation"
TRACE_CAT = "Trace"
RANGE_PROFILER_CAT = "cuda_profiler_range"

# Category names of PyTorch <= 1.13 (Kineto before the ActivityType renames; also what
# torch-tb-profiler's EventTypeMap accepts, case-insensitively) -> the current name.
LEGACY_CATEGORIES = {
    "Kernel": "kernel",
    "kernel": "kernel",
    "Runtime": "cuda_runtime",
    "runtime": "cuda_runtime",
    "Memcpy": "gpu_memcpy",
    "memcpy": "gpu_memcpy",
    "Memset": "gpu_memset",
    "memset": "gpu_memset",
    "Operator": "cpu_op",
    "operator": "cpu_op",
    "Python": "python_function",
    "python": "python_function",
    "Memory": "cpu_instant_event",
    "memory": "cpu_instant_event",
    "async_gpu": "ac2g",  # the kernel-launch flow arrows
    "trace": TRACE_CAT,
}
# Every category current Kineto writes (libkineto ActivityType names, flow categories, the
# profiler's own span): events of these that no frame holds are skipped by a rule, not unknown.
KNOWN_CATEGORIES = frozenset(
    {
        "cpu_op",
        "user_annotation",
        "gpu_user_annotation",
        "gpu_memcpy",
        "gpu_memset",
        "kernel",
        "external_correlation",
        "cuda_runtime",
        "cuda_driver",
        "hip_runtime",
        "hip_driver",
        "cpu_instant_event",
        "python_function",
        "overhead",
        "cuda_sync",
        "mtia_runtime",
        "mtia_ccp_events",
        "mtia_insight",
        "glow_runtime",
        "cuda_profiler_range",
        "hpu_op",
        "xpu_runtime",
        "xpu_driver",
        "privateuse1_runtime",
        "privateuse1_driver",
        "collective_comm",
        "gpu_pm_counter",
        "ac2g",
        "fwdbwd",
        TRACE_CAT,
    }
)
# Categories of accelerators whose work tracedash does not analyse (it measures CUDA and HIP GPU work):
# category -> (accelerator, what its events are, whether they are device work). Counted and named
# (``TraceMeta.unanalysed_device``, one warning line), never taken for "nothing ran".
OTHER_ACCELERATOR = {
    "mtia_ccp_events": ("MTIA", "device events", True),
    "mtia_insight": ("MTIA", "device insight events", True),
    "mtia_runtime": ("MTIA", "runtime calls", False),
    "xpu_runtime": ("XPU", "runtime calls", False),
    "xpu_driver": ("XPU", "driver calls", False),
    "privateuse1_runtime": ("PrivateUse1 backend", "runtime calls", False),
    "privateuse1_driver": ("PrivateUse1 backend", "driver calls", False),
    "glow_runtime": ("Glow", "runtime calls", False),
}
_LAUNCH_API = re.compile(
    r"^(cuda|cu|hip)(LaunchKernel|LaunchCooperativeKernel|LaunchKernelEx|ModuleLaunchKernel|"
    r"ExtModuleLaunchKernel|ExtLaunchKernel|GraphLaunch)",
    re.IGNORECASE,
)

# Kinds of RowAccount this loader fills (meta.accounts), in this order.
KIND_KERNELS = "kernels"
KIND_MEMOPS = "memcpy/memset"
KIND_API = "CUDA API calls"
KIND_RANGES = "NVTX ranges"  # user_annotation (record_function) ranges
KIND_MARKS = "NVTX marks"  # instant user_annotation events
KIND_OTHER = NOT_SHOWN_KIND  # everything no frame holds by design (CPU ops, flows, metadata, ...)
_KIND_OF = {
    KERNEL_CAT: KIND_KERNELS,
    MEMCPY_CAT: KIND_MEMOPS,
    MEMSET_CAT: KIND_MEMOPS,
    RANGE_CAT: KIND_RANGES,
    **{c: KIND_API for c in API_EVENT_CLASS},
}
RULE_BAD_TIME = "missing, non-numeric or out-of-range ts/dur"
RULE_NEGATIVE = "negative duration (invalid row)"
RULE_BIG_BYTES = "a byte count beyond the int64 range"
RULE_UNCLOSED_B = "'B' never closed by an 'E'"
RULE_E_UNMATCHED = "'E' without an open 'B' on its thread"
RULE_E_PAIRED = "'E' closing a 'B' (counted with its 'B')"
RULE_METADATA = "metadata (ph 'M': process and thread names)"
RULE_FLOW = "flow events (used only to link kernels to their launches)"
RULE_INSTANT = "instant events without a category (profiler markers)"


def unanalysed_rule(cat: str) -> str:
    """The skip rule of an accelerator category tracedash does not analyse (``OTHER_ACCELERATOR``)."""
    accelerator, what, _device = OTHER_ACCELERATOR[cat]
    return f"'{cat}' events: {accelerator} {what}, not analysed"


def other_rule(ph: str | None, cat: str | None) -> str | None:
    """The documented rule under which an event no frame holds is skipped (None: not recognised)."""
    if ph == "M":
        return RULE_METADATA
    if ph in ("s", "f", "t"):
        return RULE_FLOW
    if cat is None:
        return RULE_INSTANT if ph in ("i", "I") else None
    if cat in OTHER_ACCELERATOR:
        return unanalysed_rule(cat)
    if cat in KNOWN_CATEGORIES:
        return f"'{cat}' events (not shown)"
    return None
