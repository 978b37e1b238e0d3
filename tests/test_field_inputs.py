"""Inputs from the field (issue 26), the loader's side: work of other accelerators counted and named
(class 3), inputs described and other producers named (class 6). Each class: the handed file
(tests/data/cases/field/, copied from shared/cases/field/) plus members built here."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

from paths import DATA

from dashboard.analysis.summary import summarize
from dashboard.cli import main
from dashboard.inspect import format_inspect, inspect_trace
from dashboard.loaders.kineto_json import load_kineto_json
from dashboard.render import ViewOptions, build_view
from dashboard.trace import load_trace

FIELD = DATA / "cases" / "field"
MTIA = FIELD / "mtia_inference_rank_0.json.gz"  # HTA tests (MIT): an MTIA accelerator, no CUDA


def write(tmp_path: Path, events: list, name: str = "t.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps({"traceEvents": events}), encoding="utf-8")
    return p


def ev(cat, name, ts, dur, pid=1, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def report_text(trace) -> str:
    from dashboard.export import report_for_url

    page = re.sub(r"<script.*?</script>|<style.*?</style>", "", report_for_url(trace, None), flags=re.S)
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", page)))


# ---- class 3: device work of other accelerators is counted and named, never "nothing ran" ----------------

MTIA_LINE = ("1,313 MTIA device events, not analysed; 823 MTIA runtime calls, not analysed: tracedash measures the GPU "
             "work of CUDA and HIP (kernel and memcpy/memset events) only, so the MTIA device's busy time, idle and "
             "utilisation are not measured (its work is in the trace, not shown)")
MTIA_ZEROS = ("no CUDA or HIP GPU work recorded: the GPU span, busy union and idle are 0 because this capture's "
              "accelerator work (1,313 MTIA device events, 823 MTIA runtime calls) is not analysed, not because a "
              "device was idle")
MTIA_CARD = ("not measured: 1,313 MTIA device events, 823 MTIA runtime calls, not analysed (tracedash measures CUDA "
             "and HIP GPU work); no kernel, CUDA API or memcpy/memset rows")


def test_the_mtia_trace_names_its_device_work_in_summarize_inspect_overview_and_report(capsys):
    b = load_kineto_json(MTIA)
    assert b.meta.unanalysed_device == (("MTIA device events", 1313), ("MTIA runtime calls", 823))
    assert b.meta.warnings == (MTIA_LINE,)
    assert summarize(b).warnings == (MTIA_LINE, MTIA_ZEROS)
    assert main(["summarize", str(MTIA), "--no-cache"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["warnings"] == [MTIA_LINE, MTIA_ZEROS] and "nothing ran" not in out + err
    info = inspect_trace(MTIA)
    other = next(a for a in info["accounts"] if a["kind"] == "events not shown")
    assert dict(map(tuple, other["skipped"]))["'mtia_ccp_events' events: MTIA device events, not analysed"] == 1313
    assert dict(map(tuple, other["skipped"]))["'mtia_runtime' events: MTIA runtime calls, not analysed"] == 823
    assert info["warnings"] == [MTIA_LINE, MTIA_ZEROS]
    assert "1,313 skipped: 'mtia_ccp_events' events: MTIA device events, not analysed" in format_inspect(info)
    trace = load_trace(MTIA, cache=None)
    cards = {c.label: c for c in build_view(trace, ViewOptions()).cards}
    for label in ("GPU activity span", "GPU busy (union)", "GPU idle in span", "Utilisation", "Kernels"):
        assert (cards[label].value, cards[label].hint) == ("n/a", MTIA_CARD)
    assert cards["Input warnings"].hint == MTIA_LINE
    text = report_text(trace)
    assert "CUDA was not traced" not in text and "NVTX only" not in text and "nothing ran" not in text
    assert MTIA_CARD in text and MTIA_LINE in text


def test_work_of_other_accelerators_built_in_code_is_counted_and_named(tmp_path):
    # an MTIA-like capture: device events and insight events on the device's track, runtime calls on the host
    events = [ev("mtia_ccp_events", "dma_request", 10, 5, pid=17, tid=3), ev("mtia_ccp_events", "merge", 20, 5, pid=17),
              ev("mtia_insight", "insight", 30, 1, pid=17), ev("mtia_runtime", "runFunction", 5, 2, pid=865),
              ev("user_annotation", "step", 0, 40, pid=865)]
    b = load_kineto_json(write(tmp_path, events))
    assert b.meta.unanalysed_device == (("MTIA device events", 2), ("MTIA device insight events", 1),
                                        ("MTIA runtime calls", 1))
    assert b.meta.warnings == ("2 MTIA device events, not analysed; 1 MTIA device insight events, not analysed; 1 MTIA "
                               "runtime calls, not analysed: tracedash measures the GPU work of CUDA and HIP (kernel "
                               "and memcpy/memset events) only, so the MTIA device's busy time, idle and utilisation "
                               "are not measured (its work is in the trace, not shown)",)
    assert summarize(b).warnings[-1] == (
        "no CUDA or HIP GPU work recorded: the GPU span, busy union and idle are 0 because this capture's accelerator "
        "work (2 MTIA device events, 1 MTIA device insight events, 1 MTIA runtime calls) is not analysed, not because "
        "a device was idle")
    # an XPU capture: its kernels are measured; only its runtime calls are not analysed (no device clause)
    xpu = [ev("kernel", "gemm_kernel", 10, 30, pid=0, tid=7, device=0, stream=7, correlation=1),
           ev("xpu_runtime", "zeCommandListAppendLaunchKernel", 5, 2, pid=99, correlation=1),
           ev("privateuse1_driver", "drvLaunch", 6, 1, pid=99)]
    xb = load_kineto_json(write(tmp_path, xpu, "xpu.json"))
    assert xb.meta.unanalysed_device == (("XPU runtime calls", 1), ("PrivateUse1 backend driver calls", 1))
    assert xb.meta.warnings == ("1 XPU runtime calls, not analysed; 1 PrivateUse1 backend driver calls, not analysed: "
                                "tracedash measures the GPU work of CUDA and HIP (kernel and memcpy/memset events) only",)
    s = summarize(xb)
    assert (s.kernel_count, s.gpu_busy_union_ns, s.warnings) == (1, 30_000, xb.meta.warnings)
    # a CUDA trace has no such line
    assert load_kineto_json(write(tmp_path, xpu[:1], "cuda.json")).meta.unanalysed_device == ()
