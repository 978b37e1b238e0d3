"""Attribution of GPU work to dispatches by correlation, and kernel categories."""

import numpy as np
import pandas as pd
import pytest

from dashboard.analysis import phases as ph
from dashboard.analysis.attribution import UNATTRIBUTED, attribute_kernels, dispatch_metrics, phase_category_time
from dashboard.analysis.categories import OTHER, categorize, categorize_kernels, default_rules, parse_rules
from dashboard.analysis.summary import dispatch_marks
from dashboard.loaders import load_nsys_sqlite

from factories import write_nsys_sqlite


def fixture(tmp_path):
    """Two dispatches (decode 1 token at 0, prefill 100 tokens at 1000), host running ahead:

    host:  D0@0 launches k0 (api 10), k1 (api 20) | D1@1000 launches k2 (api 1010) | k3 has no API row
    GPU :  k0 [100,400)  k1 [1100,1300)  <- after D1's mark, still D0's work
           k2 [1300,1900)  k3 [1950, 1960)
    """
    nvtx = [
        {"start": 0, "end": None, "eventType": 34, "text": "CG_DISPATCH:actual=1:mode=NONE:padded=1"},
        {"start": 1000, "end": None, "eventType": 34, "text": "CG_DISPATCH:actual=100:mode=NONE:padded=128"},
    ]
    kernels = [
        {"start": 100, "end": 400, "correlationId": 1, "shortName": "nvjet_gemm"},
        {"start": 1100, "end": 1300, "correlationId": 2, "shortName": "flash_fwd_kernel"},
        {"start": 1300, "end": 1900, "correlationId": 3, "shortName": "nvjet_gemm"},
        {"start": 1950, "end": 1960, "correlationId": 99, "shortName": "elementwise_kernel"},
    ]
    runtime = [
        {"start": 10, "end": 15, "name": "cudaLaunchKernel_v7000", "correlationId": 1},
        {"start": 20, "end": 25, "name": "cudaLaunchKernel_v7000", "correlationId": 2},
        {"start": 1010, "end": 1015, "name": "cudaLaunchKernel_v7000", "correlationId": 3},
    ]
    b = load_nsys_sqlite(write_nsys_sqlite(tmp_path / "a.sqlite", kernels=kernels, runtime=runtime, nvtx=nvtx))
    d = ph.build_dispatches(dispatch_marks(b), end_ns=int(b.kernels["end_ns"].max()))
    return b, d


def test_kernel_after_next_mark_belongs_to_the_dispatch_that_launched_it(tmp_path):
    b, d = fixture(tmp_path)
    att = attribute_kernels(b.kernels, b.api_calls, d)
    assert att.tolist() == [0, 0, 1, UNATTRIBUTED]


def test_dispatch_metrics_exact(tmp_path):
    b, d = fixture(tmp_path)
    m = dispatch_metrics(d, b.kernels, attribute_kernels(b.kernels, b.api_calls, d))
    assert m["kernels"].tolist() == [2, 1]
    assert m["kernel_sum_ns"].tolist() == [500, 600]
    assert m["gpu_busy_ns"].tolist() == [500, 600]
    assert m["launch_lead_ns"].tolist() == [100, 300]
    assert m["last_kernel_end_ns"].tolist() == [1300, 1900]


def test_phase_category_time(tmp_path):
    b, d = fixture(tmp_path)
    att = attribute_kernels(b.kernels, b.api_calls, d)
    phases = pd.Series(ph.assign_phases(d, 10).to_numpy(), index=d["index"])
    cats = categorize_kernels(b.kernels)["category"]
    t = phase_category_time(b.kernels, att, phases, cats)
    assert t.values.tolist() == [
        ["decode", "GEMM", 300, 1],
        ["decode", "attention", 200, 1],
        ["prefill", "GEMM", 600, 1],
    ]


@pytest.mark.parametrize("part_rows", [1 << 21, 1, 3])  # one part; parts of 1 and 3 kernels
def test_phase_category_time_groups_in_first_seen_order_and_leaves_out_unknown_phases(monkeypatch, part_rows):
    import dashboard.analysis.attribution as attribution_module

    monkeypatch.setattr(attribution_module, "PART_ROWS", part_rows)
    durations = [100, 200, 100, 50, 300, 70, 200, 40]
    kernels = pd.DataFrame({"start_ns": [0] * 8, "end_ns": durations})
    # dispatch 9 is not among the phases, dispatch 7 has none, kernel 3 is unattributed
    attribution = np.array([5, 2, 5, UNATTRIBUTED, 9, 2, 5, 7])
    phases = pd.Series(["decode", "prefill", None], index=[5, 2, 7])
    cats = pd.Series(pd.Categorical(["A", "B", "A", "A", "B", "A", "B", "A"]))
    t = phase_category_time(kernels, attribution, phases, cats)
    assert t.values.tolist() == [  # a tie keeps the order first seen: A before B
        ["decode", "A", 200, 2],
        ["decode", "B", 200, 1],
        ["prefill", "B", 200, 1],
        ["prefill", "A", 70, 1],
    ]


@pytest.mark.parametrize("part_rows", [1 << 21, 1, 3])  # one part; parts of 1 and 3 kernels
def test_phase_category_time_of_dispatches_numbered_from_0(monkeypatch, part_rows):
    """Dispatches numbered 0, 1, ... (a whole trace's): the attribution is the position, no search; a value
    past the last dispatch is no dispatch. The same sums as the searched path of the test above."""
    import dashboard.analysis.attribution as attribution_module

    monkeypatch.setattr(attribution_module, "PART_ROWS", part_rows)
    durations = [100, 200, 100, 50, 300, 70, 200, 40]
    kernels = pd.DataFrame({"start_ns": [0] * 8, "end_ns": durations})
    attribution = np.array([0, 1, 0, UNATTRIBUTED, 3, 1, 0, 2], dtype=np.int32)
    phases = pd.Series(["decode", "prefill", None], index=[0, 1, 2])
    cats = pd.Series(pd.Categorical(["A", "B", "A", "A", "B", "A", "B", "A"]))
    t = phase_category_time(kernels, attribution, phases, cats)
    assert t.values.tolist() == [
        ["decode", "A", 200, 2],
        ["decode", "B", 200, 1],
        ["prefill", "B", 200, 1],
        ["prefill", "A", 70, 1],
    ]
    assert t["kernel_sum_ns"].dtype == np.int64 and t["kernels"].dtype == np.int64


def test_no_dispatches_or_no_api_means_unattributed(tmp_path):
    b, d = fixture(tmp_path)
    assert (attribute_kernels(b.kernels, b.api_calls.iloc[0:0], d) == UNATTRIBUTED).all()
    assert (attribute_kernels(b.kernels, b.api_calls, d.iloc[0:0]) == UNATTRIBUTED).all()
    m = dispatch_metrics(d, b.kernels, np.full(len(b.kernels), UNATTRIBUTED))
    assert m["kernels"].tolist() == [0, 0] and m["launch_lead_ns"].isna().all()


@pytest.mark.parametrize(
    "short, full, category",
    [
        ("nvjet_sm121_tst_mma_128x208x64", "", "GEMM"),
        ("device_kernel", "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal>()", "GEMM"),
        ("flash_fwd_kernel", "void flash::flash_fwd_kernel<cutlass::bfloat16_t>()", "attention"),
        ("_qsa_sparse_paged_gqa_splitk_kernel", "", "attention"),
        ("fused_moe_kernel", "", "MoE"),
        ("rms_norm_kernel", "", "normalisation"),
        ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "", "communication"),
        ("reshape_and_cache_flash_kernel", "", "memory"),
        ("act_and_mul_kernel", "", "elementwise/activation"),
        ("kernel", "", OTHER),
    ],
)
def test_default_category_rules(short, full, category):
    got, rule = categorize(short, full)
    assert got == category
    assert (rule == "") == (category == OTHER)


def test_rules_file_is_versioned_and_validated():
    assert default_rules().version >= 2 and len(default_rules().rules) == 9
    custom = parse_rules('version = 2\n[[rule]]\ncategory = "mine"\npattern = "^k"\n')
    assert categorize("kernel", "", custom) == ("mine", "mine: /^k/ on short name")
    with pytest.raises(ValueError, match="bad pattern"):
        parse_rules('[[rule]]\ncategory = "x"\npattern = "("\n')
    with pytest.raises(ValueError, match="needs a category"):
        parse_rules('[[rule]]\npattern = "x"\n')


@pytest.mark.parametrize("part_rows", [1, 2])  # dispatch id ranges of one dispatch each, as 10M kernels are worked
def test_dispatch_metrics_in_dispatch_id_ranges_are_the_one_pass_values(tmp_path, monkeypatch, part_rows):
    import dashboard.analysis.attribution as attribution_module

    b, d = fixture(tmp_path)
    attr = attribute_kernels(b.kernels, b.api_calls, d)
    whole = dispatch_metrics(d, b.kernels, attr)
    monkeypatch.setattr(attribution_module.dispatch_id_ranges, "__defaults__", (part_rows,))
    assert [(lo, hi) for lo, hi, _ in attribution_module.dispatch_id_ranges(attr, len(d))] == [(0, 1), (1, 2)]
    parts = dispatch_metrics(d, b.kernels, attr)
    assert parts.equals(whole)
    assert parts["kernel_sum_ns"].tolist() == [500, 600] and parts["first_kernel_ns"].tolist() == [100, 1300]
