"""The load preview: what the page shows of a big trace while the rest of it loads.

The loader reads the kernel rows' recorded times and devices first (``load_nsys_sqlite``'s ``on_kernel_times``);
from those alone this computes the headline numbers a performance engineer looks at first (how many kernels, over
what span, how busy each GPU was) and a coarse timeline of busy fraction per bin. They are exact for what they
are: kernel rows *as recorded*. The full overview differs only where the loaded trace adds to them: same-stream
overruns clipped, CUDA graphs traced at graph level, memcpy/memset by the busy source. The page says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dashboard.analysis.intervals import union_fraction_bins, union_intervals, union_length
from dashboard.analysis.kernel_times import usable_times
from dashboard.model import DeviceLane

PREVIEW_BINS = 400  # busy fraction bins across the span: about 3 px each on a 1600 px page


@dataclass(frozen=True)
class LoadPreview:
    """Kernel rows as recorded, before the rest of the trace is read.

    ``kernel_rows``: every row of the kernel table (the overview's "Kernels" card counts the same);
    ``timed_rows``: those with usable times (the rows that count for span and busy); ``first_ns``/``last_ns``:
    the first start and last end of those (None without any); ``unions``: per device id its busy union
    (disjoint, sorted ``(starts_ns, ends_ns)``); ``busy_ns``: the union over every device.
    """

    kernel_rows: int
    timed_rows: int
    first_ns: int | None
    last_ns: int | None
    unions: dict[int, tuple[np.ndarray, np.ndarray]]
    busy_ns: int

    @property
    def span_ns(self) -> int:
        """First start to last end of the timed kernel rows (0 without any)."""
        return 0 if self.first_ns is None else self.last_ns - self.first_ns

    def device_busy_ns(self) -> dict[int, int]:
        """Busy union per device id, ns."""
        return {dev: int((e - s).sum()) for dev, (s, e) in self.unions.items()}


def _int64(values, fill: int) -> np.ndarray:
    """A column as int64, NULLs (a masked array's or pandas' NA) as ``fill``."""
    if hasattr(values, "to_numpy") and not isinstance(values, np.ndarray):
        return values.to_numpy(dtype=np.int64, na_value=fill)
    return np.asarray(values, dtype=np.int64)


def load_preview(start_ns, end_ns, device_id) -> LoadPreview:
    """The preview of kernel rows from their recorded times (aligned arrays, one entry per row; NULL times
    as NA or -1). A row counts as the summary counts it (``kernel_times.usable_times``)."""
    s = _int64(start_ns, -1)
    e = _int64(end_ns, -1)
    d = _int64(device_id, 0)
    ok = usable_times(s, e)
    if not ok.all():
        s, e, d = s[ok], e[ok], d[ok]
    unions = {}
    if s.size and (d == d[0]).all():  # one GPU: no grouping
        unions[int(d[0])] = union_intervals(s, e)
    elif s.size:
        codes, devices = _device_codes(d)
        order = np.argsort(codes, kind="stable")
        bounds = np.searchsorted(codes[order], np.arange(len(devices) + 1))
        for k, dev in enumerate(devices.tolist()):
            rows = order[bounds[k] : bounds[k + 1]]
            unions[int(dev)] = union_intervals(s[rows], e[rows])
    if len(unions) > 1:
        busy = union_length(
            np.concatenate([u[0] for u in unions.values()]), np.concatenate([u[1] for u in unions.values()])
        )
    else:  # one GPU: its union is the whole union
        busy = sum(int((ue - us).sum()) for us, ue in unions.values())
    return LoadPreview(
        kernel_rows=int(len(ok)),
        timed_rows=int(s.size),
        first_ns=int(s.min()) if s.size else None,
        last_ns=int(e.max()) if s.size else None,
        unions=dict(sorted(unions.items())),
        busy_ns=busy,
    )


def _device_codes(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes 0..k-1 of the device ids and the ids in ascending order (a trace has a handful of devices)."""
    devices = np.unique(d)
    return np.searchsorted(devices, d), devices


def preview_lanes(preview: LoadPreview, n_bins: int = PREVIEW_BINS) -> list[DeviceLane]:
    """One lane per device over the whole span, each its busy fraction in ``n_bins`` bins (no individual
    intervals: the preview is a level of detail); empty without timed rows."""
    if preview.first_ns is None or preview.last_ns <= preview.first_ns:
        return []
    lo, hi = preview.first_ns, preview.last_ns
    empty = np.empty(0, np.int64)
    lanes = []
    for dev, (us, ue) in preview.unions.items():
        edges, fraction = union_fraction_bins(us, ue, lo, hi, n_bins)
        lanes.append(DeviceLane(dev, "bins", int((ue - us).sum()), empty, empty, empty, empty, edges, fraction))
    return lanes
