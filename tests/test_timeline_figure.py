"""Exact-value tests of what the timeline and its sibling figures draw (issue 11: points 3, 6, 7)."""

import colorsys
import math

import numpy as np
import pytest

from dashboard.analysis.timeline import lanes_for_window, nvtx_lane_keys, pixel_runs, thread_labeler
from dashboard.app.components import GRAPH_CONFIG, graph_config
from dashboard.data.trace import load_trace
from dashboard.figures.common import REPORT_FONT_PX, add_caption, bar_labels, report_layout
from dashboard.figures.lanes import LANE_PX, Highlight, fraction_colors, merge_equal_bins, timeline_height
from dashboard.figures.phases import build_phase_analysis, decade_ticks
from dashboard.figures.theme import CATEGORY_COLORS, DEFAULT_THEME, NVTX_PALETTE, category_color, nvtx_color
from dashboard.render import build_view, timeline_figure
from dashboard.render.export import report_for_url
from dashboard.state import ViewState

from factories import GLOBAL_PID_1, GLOBAL_TID_1, write_nsys_sqlite
from paths import DATA, SAMPLES, SEED, nsys_trace

OTHER_TID = GLOBAL_PID_1 | 102  # pid 100, tid 102


def _hue_deg(color: str) -> float:
    r, g, b = (int(color.lstrip("#")[i : i + 2], 16) / 255 for i in (0, 2, 4))
    return colorsys.rgb_to_hls(r, g, b)[0] * 360


def _rgb(text: str) -> tuple[int, ...]:
    if text.startswith("#"):
        return tuple(int(text[i : i + 2], 16) for i in (1, 3, 5))
    return tuple(int(v) for v in text[4:-1].split(","))


def _plot_px_per_lane(fig) -> float:
    m = fig.layout.margin
    return (fig.layout.height - m.t - m.b) / fig.layout.meta["lanes"]


@pytest.fixture
def launch_trace(tmp_path):
    """Two kernels launched from thread 'python3' (correlation ids 5 and 6), one NVTX range around them."""
    path = write_nsys_sqlite(
        tmp_path / "launch.sqlite",
        kernels=[
            {"start": 1_000, "end": 3_000, "correlationId": 5, "shortName": "gemm_kernel"},
            {"start": 4_000, "end": 4_500, "correlationId": 6, "shortName": "rms_norm_kernel"},
        ],
        runtime=[
            {"start": 500, "end": 800, "name": "cudaLaunchKernel_v7000", "correlationId": 5},
            {"start": 3_500, "end": 3_600, "name": "cudaLaunchKernel_v7000", "correlationId": 6},
        ],
        nvtx=[
            {"start": 400, "end": 5_000, "eventType": 59, "text": "step"},
            {"start": 450, "end": 900, "eventType": 59, "text": "other", "globalTid": OTHER_TID},
        ],
        thread_names={GLOBAL_TID_1: "python3"},
    )
    return load_trace(path)


# --- text in bars -------------------------------------------------------------------------------


def test_bar_labels_only_where_the_bar_holds_them():
    # 1 ns per px, 10 px font: 6.2 px per character, 3 px padding on each side
    names = ["abcdefghij"] * 4 + ["<x>"]
    starts = [0, 0, 0, 0, 0]
    ends = [100, 60, 31, 30, 100]
    assert bar_labels(names, starts, ends, 1.0, font_px=10) == [
        "abcdefghij",  # floor(94 / 6.2) = 15 >= 10: the whole name
        "abcdefg…",  # floor(54 / 6.2) = 8 characters, the last one the ellipsis
        "abc…",  # floor(25 / 6.2) = 4: the shortest elided label
        "",  # floor(24 / 6.2) = 3 characters fit: no text
        "&lt;x&gt;",  # escaped for Plotly's HTML-like text
    ]
    assert bar_labels(["a"], [0], [10], 0.0) == [""]  # no scale (no window): no text


def test_labels_in_a_zoomed_figure_are_elided_never_longer_than_the_bar(launch_trace):
    fig = timeline_figure(launch_trace, ViewState(), (0, 6_000))
    kernels = {tr.name: tr for tr in fig.data if tr.name.startswith("kernels: ")}
    texts = [t for tr in kernels.values() for t in tr.text]
    assert sorted(texts) == ["gemm_kernel", "rms_norm_kernel"]  # 2000 and 500 ns of 6000 ns at 1300 px
    assert fig.layout.uniformtext.mode == "hide"  # the browser hides what still would not fit
    for tr in fig.data:
        if tr.type == "bar" and tr.text is not None:
            assert tr.textposition == "inside" and tr.constraintext == "inside"


# --- lanes, size, threads -----------------------------------------------------------------------


def test_timeline_height_gives_every_lane_its_pitch():
    assert timeline_height(3, 56, 30) == 470  # at least 47 % of a 1000 px viewport
    assert timeline_height(30, 56, 30) == 56 + 30 + 30 * LANE_PX
    assert LANE_PX >= 18


@pytest.mark.parametrize(
    "trace",
    [SAMPLES / "generated_seed_shaped_108k.sqlite", nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite")],
    ids=lambda p: p.name,
)
def test_lanes_are_at_least_18_px_and_the_figure_fills_45_percent_of_1000_px(trace):
    view = build_view(load_trace(trace), ViewState())
    fig = view.timeline  # with its caption
    assert fig.layout.height >= 450
    assert _plot_px_per_lane(fig) >= 18
    assert fig.layout.title.x == 0 and fig.layout.title.xanchor == "left"  # the mode bar sits top right
    assert "zoom in" not in fig.layout.title.text  # level-of-detail notes are in the status line
    status = [a for a in fig.layout.annotations if a.name == "status"]
    assert len(status) == 1 and "zoom in to 1,500 or fewer" in status[0].text
    assert view.gantt.layout.title.x <= 0.01  # left (an empty Gantt's title too)
    for f in [
        f for f in (fig, view.gantt) if f.data
    ]:  # seconds with SI prefixes glued to the unit: "0.4µs", never "0.4µ s"
        assert (f.layout.xaxis.ticksuffix, f.layout.xaxis.exponentformat, f.layout.xaxis.minexponent) == ("s", "SI", 1)


def test_thread_labeler_names_threads_and_disambiguates():
    names = {
        (1 << 48) | (144 << 24) | 144: "python3",
        (1 << 48) | (145 << 24) | 145: "python3",
        (1 << 48) | (144 << 24) | 245: "watchdog",
        (1 << 48) | (144 << 24) | 246: "worker",
        (1 << 48) | (144 << 24) | 247: "worker",
    }
    label = thread_labeler(names)
    assert label((1 << 48) | (144 << 24) | 245, 144, 245) == "watchdog"  # unique name
    assert label((1 << 48) | (145 << 24) | 145, 145, 145) == "python3 · pid 145"  # one per process
    assert label((1 << 48) | (144 << 24) | 247, 144, 247) == "worker · tid 247"  # two in one process
    assert label((1 << 48) | (144 << 24) | 999, 144, 999) == "pid 144 · tid 999"  # unnamed
    merged = thread_labeler({(7 << 24) | 245: "watchdog"}, ranks={7: (1, 144)})  # merged process 7 = rank 1 pid 144
    assert merged((7 << 24) | 245, 7, 245) == "rank 1 · watchdog"
    assert merged((7 << 24) | 9, 7, 9) == "rank 1 · pid 144 · tid 9"


def test_nvtx_lanes_and_api_lanes_are_named_by_thread(launch_trace):
    lanes = nvtx_lane_keys(launch_trace.bundle.nvtx_ranges, thread_names=launch_trace.meta.thread_names)
    assert dict(zip(lanes["name"], lanes["lane"])) == {"step": "python3 · L0", "other": "pid 100 · tid 102 · L0"}
    fig = timeline_figure(launch_trace, ViewState(), (0, 6_000))
    assert list(reversed(fig.layout.yaxis.categoryarray)) == [
        "python3 · L0",
        "CUDA API · python3",
        "pid 100 · tid 102 · L0",
        "GPU 0",
        "GPU 0 · stream 7",
    ]
    nvtx = next(tr for tr in fig.data if tr.name == "NVTX ranges (colour = name)" and tr.showlegend is False)
    assert "thread python3 · pid 100 · tid 101" in nvtx.hovertext[list(nvtx.y).index("python3 · L0")]
    other = nvtx.hovertext[list(nvtx.y).index("pid 100 · tid 102 · L0")]
    assert other.endswith("<br>thread pid 100 · tid 102")  # an unnamed thread: its ids once
    api = next(tr for tr in fig.data if tr.name == "CUDA API calls")
    # 300 ns = 65 px at 6000 ns per 1300 px: 8 characters of 6.82 px fit; 100 ns = 22 px: none
    assert list(api.y) == ["CUDA API · python3"] * 2 and list(api.text) == ["cudaLau…", ""]
    assert "correlation id 5" in api.hovertext[0]
    kern = [tr for tr in fig.data if tr.name.startswith("kernels: ")]
    hover = " ".join(h for tr in kern for h in tr.hovertext)
    assert (
        "correlation id 5 · launched by cudaLaunchKernel on python3 at 0.000000500 s (launch to start 500 ns)" in hover
    )


# --- colours ------------------------------------------------------------------------------------


def test_nvtx_colour_is_stable_and_never_the_idle_hue():
    assert nvtx_color("PLE_lookup_tokens=1600") == nvtx_color("PLE_lookup_tokens=1600")
    assert nvtx_color("PLE_lookup_tokens=1600") in NVTX_PALETTE
    assert len(set(NVTX_PALETTE)) == len(NVTX_PALETTE) == 10
    idle = _hue_deg(DEFAULT_THEME.idle)
    for c in NVTX_PALETTE + tuple(CATEGORY_COLORS.values()):
        d = abs(_hue_deg(c) - idle) % 360
        assert min(d, 360 - d) >= 25, c  # orange (27°) is the closest to the rose idle (3°)
    assert DEFAULT_THEME.idle not in NVTX_PALETTE and DEFAULT_THEME.busy not in NVTX_PALETTE


def test_category_colours_are_one_per_category_and_shared():
    assert category_color("GEMM") == CATEGORY_COLORS["GEMM"]
    assert len(set(CATEGORY_COLORS.values())) == len(CATEGORY_COLORS)
    assert category_color("my own category") in CATEGORY_COLORS.values()
    assert category_color("my own category") == category_color("my own category")


def test_kernel_colours_never_pass_for_nvtx_colours():
    def rgb(c):
        return [int(c[i : i + 2], 16) for i in (1, 3, 5)]

    for k in CATEGORY_COLORS.values():
        assert min(math.dist(rgb(k), rgb(n)) for n in (*NVTX_PALETTE, DEFAULT_THEME.memops)) >= 60, k


def test_busy_bins_are_never_paler_than_the_visible_minimum():
    theme = DEFAULT_THEME
    colors = fraction_colors(np.array([0.0001, 0.5, 1.0]), theme.busy_min, theme.busy)
    assert colors[0] == "rgb(143,191,164)" and _rgb(colors[0]) == _rgb(theme.busy_min)
    assert colors[2] == "rgb(47,111,79)"
    # the visible minimum is darker than the page and not the idle hue
    assert sum(_rgb(theme.busy_min)) < 0.8 * 3 * 255
    assert abs(_hue_deg(theme.busy_min) - _hue_deg(theme.idle)) >= 90


def test_binned_lane_draws_idle_bins_in_the_idle_colour():
    # GPU 0: 1000 kernels of 10 ns every 20 ns in [0, 20000), then nothing while GPU 1 works until 40000: two
    # bins busy 50 %, two idle (inside the GPU activity span [0, 40000))
    starts = np.arange(0, 20_000, 20)
    alone = lanes_for_window({0: (starts, starts + 10)}, lo_ns=0, hi_ns=40_000, budget=100, n_bins=4)
    # alone, the time after its last kernel is outside the activity span: not idle, no bins drawn there
    assert alone[0].mode == "bins" and alone[0].fraction.tolist() == [0.5, 0.5]
    assert alone[0].edges.tolist() == [0, 10_000, 20_000]
    unions = {0: (starts, starts + 10), 1: (np.array([39_000]), np.array([40_000]))}
    lanes = lanes_for_window(unions, lo_ns=0, hi_ns=40_000, budget=100, n_bins=4)[:1]
    assert lanes[0].mode == "bins" and lanes[0].fraction.tolist() == [0.5, 0.5, 0.0, 0.0]
    import pandas as pd

    from dashboard.figures.timeline import build_gpu_timeline

    empty = pd.DataFrame()
    fig = build_gpu_timeline(
        lanes,
        nvtx_lane_keys(empty.assign(global_tid=[], start_ns=[], end_ns=[])),
        empty,
        gpus={},
        x_range_ns=(0, 40_000),
        busy_label="kernels",
        notes=[],
    )
    bins = next(tr for tr in fig.data if tr.name.startswith("GPU busy fraction"))
    idle = next(tr for tr in fig.data if tr.name == "GPU idle")
    assert list(bins.base) == [0.0] and list(bins.x) == [20_000 / 1e9]  # two equal bins joined into one bar
    assert bins.marker.color == ("rgb(95,151,122)",)  # half-way from busy_min to busy
    assert list(idle.base) == [20_000 / 1e9] and idle.marker.color == DEFAULT_THEME.idle


def test_merge_equal_bins():
    edges, frac = merge_equal_bins(np.array([0, 10, 20, 30, 40]), np.array([1.0, 1.0, 0.0, 0.0]))
    assert edges.tolist() == [0, 20, 40] and frac.tolist() == [1.0, 0.0]
    edges, frac = merge_equal_bins(np.array([0, 10, 20]), np.array([0.5, 0.25]))
    assert edges.tolist() == [0, 10, 20] and frac.tolist() == [0.5, 0.25]


def test_sub_pixel_busy_intervals_are_binned_within_the_budget():
    starts = np.arange(0, 1_000, 100)
    unions = {0: (starts, starts + 2)}  # 10 kernels of 2 ns: under one 5 ns pixel
    assert lanes_for_window(unions, lo_ns=0, hi_ns=1_000, budget=100, n_bins=10)[0].mode == "intervals"
    lane = lanes_for_window(unions, lo_ns=0, hi_ns=1_000, budget=100, n_bins=10, min_visible_ns=5)[0]
    assert lane.mode == "bins" and lane.fraction.tolist() == [0.02] * 10 and lane.busy_ns == 20


# --- legend -------------------------------------------------------------------------------------


def test_legend_lists_kernel_categories_and_one_neutral_nvtx_entry(launch_trace):
    fig = timeline_figure(launch_trace, ViewState(), (0, 6_000))
    shown = [tr.name for tr in fig.data if tr.showlegend is not False]
    assert shown == [
        "NVTX ranges (colour = name)",
        "CUDA API calls",
        "GPU busy (kernels)",
        "GPU idle",
        "kernels: GEMM",
        "kernels: normalisation",
    ]
    nvtx_swatch = next(tr for tr in fig.data if tr.name.startswith("NVTX") and tr.showlegend is not False)
    assert nvtx_swatch.marker.color == DEFAULT_THEME.nvtx
    gemm = next(tr for tr in fig.data if tr.name == "kernels: GEMM")
    assert gemm.marker.color == CATEGORY_COLORS["GEMM"]


# --- highlight and launch link ------------------------------------------------------------------


def test_selected_kernel_shows_its_launch_call_and_a_connector(launch_trace):
    hl = Highlight(1_000, 3_000, label="gemm_kernel", kind="kernel")
    fig = timeline_figure(launch_trace, ViewState(), (0, 6_000), highlight=hl)
    link = next(tr for tr in fig.data if tr.name == "launch → kernel (correlation id 5)")
    assert list(link.x) == [500 / 1e9, 1_000 / 1e9]
    assert list(link.y) == ["CUDA API · python3", "GPU 0 · stream 7"]
    call = next(tr for tr in fig.data if tr.name == "launch call (correlation id 5)")
    assert list(call.base) == [500 / 1e9] and list(call.x) == [300 / 1e9] and call.marker.line.width == 2
    shapes = {s.name: s for s in fig.layout.shapes}
    assert (shapes["highlight"].x0, shapes["highlight"].x1) == (1e-6, 3e-6)
    assert [a.text for a in fig.layout.annotations if a.name == "highlight"] == ["gemm_kernel"]


def test_launch_link_is_drawn_even_when_kernels_are_not(launch_trace):
    hl = Highlight(1_000, 3_000, kind="kernel")
    fig = timeline_figure(launch_trace, ViewState(lanes=("nvtx", "gpu")), (0, 6_000), highlight=hl)
    link = next(tr for tr in fig.data if tr.name.startswith("launch → kernel"))
    assert list(link.y) == ["CUDA API · python3", "GPU 0"]  # ends in the GPU lane
    assert "CUDA API · python3" in fig.layout.yaxis.categoryarray


def test_highlight_of_a_range_outlines_its_lane(launch_trace):
    hl = Highlight(4_000, 4_500, lane="GPU 0", kind="gap")
    fig = timeline_figure(launch_trace, ViewState(), (0, 6_000), highlight=hl)
    shapes = {s.name: s for s in fig.layout.shapes}
    cats = list(fig.layout.yaxis.categoryarray)  # bottom-up
    assert (shapes["highlight lane"].y0, shapes["highlight lane"].y1) == (
        cats.index("GPU 0") - 0.45,
        cats.index("GPU 0") + 0.45,
    )
    assert not [tr for tr in fig.data if (tr.name or "").startswith("launch")]


# --- export layout ------------------------------------------------------------------------------


def _fonts(fig):
    lay = fig.layout
    sizes = [lay.font.size, lay.legend.font.size, lay.title.font.size]
    sizes += [ax.tickfont.size for ax in fig.select_xaxes()] + [ax.tickfont.size for ax in fig.select_yaxes()]
    sizes += [a.font.size for a in lay.annotations]
    sizes += [tr.textfont.size for tr in fig.data if getattr(tr, "text", None) is not None]
    return sizes


def test_report_layout_fonts_aspect_and_no_hints():
    t = load_trace(nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite"))
    view = build_view(t, ViewState())
    out = report_layout(view.timeline, width=1600)
    assert min(_fonts(out)) >= REPORT_FONT_PX == 14
    assert 1600 / out.layout.height <= 3.0
    assert [a.name for a in out.layout.annotations] == ["caption"]  # the status line is gone: its facts stay
    assert out.layout.annotations[0].text.replace("<br>", " ") == (
        "tracedash · nsys2026.2_2gpu_nccl_before.sqlite · whole trace · At this scale: 4,010 kernels in view · "
        "1,289 memcpy/memset in view · 17,618 shorter NVTX ranges hidden at this scale (showing the 1,500 longest) · "
        "GPU lanes binned into busy fractions (intervals too many or too short to draw one by one)"
    )
    assert out.layout.uniformtext.minsize == 14
    assert all(ax.automargin for ax in out.select_yaxes())
    assert any(a.name == "status" for a in view.timeline.layout.annotations)  # the screen figure is unchanged
    assert _plot_px_per_lane(out) >= 30
    phases = report_layout(view.phase_figure)
    assert min(_fonts(phases)) >= 14


def test_screen_facts_keep_what_is_left_out_and_drop_the_instructions():
    """QA, 2026-12-07: an exported timeline dropped its level-of-detail line, so the gaps its hidden NVTX ranges
    left read as an idle host; an image cannot be zoomed, so the ": zoom in …" parts go."""
    from dashboard.figures.common import screen_facts

    status = (
        "108,000 kernels in view: zoom in to 1,500 or fewer to see each one by stream with its CUDA API calls · GPU"
        "<br>lanes binned into busy fractions (intervals too many or too short to draw one by one) · 9 of 409 marks "
        "hidden"
    )
    assert screen_facts(status) == (
        "At this scale: 108,000 kernels in view · GPU lanes binned into busy fractions (intervals too many or too "
        "short to draw one by one) · 9 of 409 marks hidden"
    )
    assert screen_facts("") == "" and screen_facts("802 CUDA API calls in view: zoom in to 400 or fewer") == (
        "At this scale: 802 CUDA API calls in view"
    )


def test_report_layout_wraps_the_caption_again_for_its_width():
    """A caption wrapped for the screen (160 characters of 10 px text) is wrapped again for the image:
    14 px text in an 800 px wide image would otherwise run past its right edge."""
    import plotly.graph_objects as go

    words = " ".join(f"word{i:03d}" for i in range(60))  # 479 characters
    fig = add_caption(go.Figure(layout=dict(margin=dict(l=80, r=80, b=40), height=300)), words, wrap=160)
    assert [len(line) for line in fig.layout.annotations[0].text.split("<br>")] == [159, 159, 159]
    out = report_layout(fig, width=800)  # plot 640 px: 76 characters of 0.6 × 14 px
    lines = out.layout.annotations[0].text.split("<br>")
    assert max(len(line) for line in lines) <= 76 and len(lines) == 7
    assert " ".join(lines) == words
    assert out.layout.margin.b >= 7 * (REPORT_FONT_PX + 6)  # the bottom margin holds every line


def test_add_caption_grows_the_figure_not_the_lanes(launch_trace):
    fig = timeline_figure(launch_trace, ViewState(), (0, 6_000))
    before = _plot_px_per_lane(fig)
    add_caption(fig, "x " * 100)
    assert _plot_px_per_lane(fig) == before


# --- graph config, report -----------------------------------------------------------------------


def test_no_cloud_buttons_in_the_graph_config():
    for cfg in (GRAPH_CONFIG, graph_config("f")):
        assert cfg["showSendToCloud"] is False and cfg["plotlyServerURL"] == ""
        # keys plotly.js 3 does not know made every figure update a new plot (tests/browser: PlotSchema's keys)
        assert not {"showEditInChartStudio", "showLink", "sendData"} & set(cfg)
        assert cfg["showTips"] is False  # no "Double-click to zoom back out" toast over the page header
    assert graph_config("f")["toImageButtonOptions"]["filename"] == "f"


def test_report_has_no_control_instructions_empty_headings_or_overflow():
    html = report_for_url(load_trace(nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite")), None)
    assert "controls above" not in html and "zoom in to" not in html
    assert "<h2>Per phase</h2>" not in html  # no dispatches, no phase table
    assert "<h2>Dispatches</h2><p class='small'>No dispatch marks found with prefix" in html
    assert "overflow-wrap: anywhere" in html
    assert '"showSendToCloud": false' in html


# --- phases -------------------------------------------------------------------------------------


def test_decade_ticks():
    assert decade_ticks([3.5, 17.0]) == ([1.0, 10.0, 100.0], ["1", "10", "100"], [-0.05, 2.05])
    assert decade_ticks([10.0, 10.0]) == ([10.0, 100.0], ["10", "100"], [0.95, 2.05])  # at least two decades
    assert decade_ticks([0.02, 250.0])[1] == ["0.01", "0.1", "1", "10", "100", "1000"]
    assert decade_ticks([]) == ([1.0, 10.0], ["1", "10"], [-0.05, 1.05])


def test_phase_figure_log_ticks_and_legend_beside_the_bars():
    t = load_trace(SAMPLES / "generated_seed_shaped_108k.sqlite")
    fig = build_view(t, ViewState()).phase_figure
    boxes = [tr for tr in fig.data if tr.type == "box"]
    bars = [tr for tr in fig.data if tr.type == "bar"]
    assert {tr.xaxis for tr in boxes} == {"x"} and {tr.xaxis for tr in bars} == {"x2"}
    assert fig.layout.legend.x >= 1 and fig.layout.xaxis2.domain[1] == 1.0  # legend right of the bars' panel
    # The legend reads top to bottom as the stack does: the first bar trace is the bottom segment.
    assert fig.layout.barmode == "stack" and fig.layout.legend.traceorder == "reversed"
    assert list(fig.layout.yaxis.tickvals) == [10.0, 100.0, 1000.0]  # decode ~16 ms, prefill ~300 ms
    ys = np.concatenate([np.asarray(b.y, dtype=float) for b in boxes])
    lo, hi = fig.layout.yaxis.range
    assert 10**lo < ys.min() and ys.max() < 10**hi  # every series inside the plot
    summary = build_view(load_trace(SEED), ViewState()).phase_figure
    assert summary.layout.showlegend is False and len(summary.layout.yaxis.tickvals) >= 2


def test_phase_figure_without_categories_has_one_panel():
    import pandas as pd

    d = pd.DataFrame({"duration_ns": [2_000_000, 30_000_000]})
    fig = build_phase_analysis(d, pd.Series(["decode", "prefill"]), None)
    assert [tr.type for tr in fig.data] == ["box", "box"] and fig.layout.showlegend is False


def test_report_layout_fits_bar_labels_again_at_its_font_size(launch_trace):
    fig = timeline_figure(launch_trace, ViewState(), (0, 6_000))
    out = report_layout(fig, width=1600)  # 6000 ns over 1600 - 210 - 20 px; 14 px text: 8.68 px per character
    texts = {t for tr in out.data if tr.name.startswith("kernels: ") for t in tr.text}
    assert texts == {"gemm_kernel", "rms_norm_ke…"}  # 500 ns = 114 px: 12 characters
    assert list(next(tr for tr in out.data if tr.name == "CUDA API calls").text) == ["cudaLa…", ""]
    assert {t for tr in fig.data if tr.name.startswith("kernels: ") for t in tr.text} == {
        "gemm_kernel",
        "rms_norm_kernel",
    }


def test_compare_step_time_overlay_has_a_tick_at_every_decade():
    import pandas as pd

    from dashboard.figures.compare import build_step_time_overlay

    a = pd.DataFrame({"phase": ["decode", "decode"], "duration_ns": [15_000_000, 17_000_000]})
    b = pd.DataFrame({"phase": ["decode"], "duration_ns": [40_000_000]})
    fig = build_step_time_overlay(a, b)
    assert list(fig.layout.yaxis.tickvals) == [10.0, 100.0] and list(fig.layout.yaxis.range) == [0.95, 2.05]


def test_thread_hover_names_each_id_once():
    from dashboard.figures.lanes import _thread_hover

    assert _thread_hover("python3 · tid 145", 145, 145) == "thread python3 · pid 145 · tid 145"
    assert _thread_hover("python3 · pid 145", 145, 146) == "thread python3 · pid 145 · tid 146"
    assert _thread_hover("watchdog", 144, 245) == "thread watchdog · pid 144 · tid 245"
    assert _thread_hover("rank 1 · pid 144 · tid 9", 144, 9) == "thread rank 1 · pid 144 · tid 9"


def test_phase_without_kernel_time_has_no_category_shares():
    import pandas as pd

    d = pd.DataFrame({"duration_ns": [2_000_000, 30_000_000]})
    cats = pd.DataFrame(
        {
            "phase": ["decode", "prefill", "prefill"],
            "category": ["GEMM", "GEMM", "attention"],
            "kernel_sum_ns": [0, 300, 100],
        }
    )
    fig = build_phase_analysis(d, pd.Series(["decode", "prefill"]), cats)
    bars = {tr.name: dict(zip(tr.x, tr.y)) for tr in fig.data if tr.type == "bar"}
    assert bars["GEMM"] == {"decode": None, "prefill": 75.0} and bars["attention"] == {"decode": None, "prefill": 25.0}


def test_a_window_outside_the_trace_says_so_instead_of_an_empty_plot():
    """A link's window where nothing was recorded (the NCCL export's activity is at 60.1–60.4 s of its
    session) draws the plot's message with the trace's extent, never a blank plot; a window inside the
    activity has no such message. The extent is unpadded: first NVTX start, last kernel end."""
    trace = load_trace(nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite"))
    fig = timeline_figure(trace, ViewState(), (100_000_000, 101_000_000))
    assert [(a.name, a.text) for a in fig.layout.annotations] == [
        ("empty", "Nothing recorded in this window: the trace's activity runs from 60.111430 to 60.411416 s")
    ]
    assert trace.bundle.kernels["end_ns"].max() == 60_411_390_119  # the last end is an NVTX range's, after it
    inside = timeline_figure(trace, ViewState(), (60_200_000_000, 60_201_000_000))
    assert "empty" not in [a.name for a in inside.layout.annotations]
    assert sum(len(t.x) for t in inside.data if t.x is not None) > 0


def test_an_nvtx_only_trace_zoomed_where_it_recorded_nothing_says_so_on_the_time_axis():
    """A trace without GPU lanes (NVTX only, CUDA not traced) in a window past its activity read "This trace has no
    kernels, memory operations or NVTX ranges to draw" (false: it has 195 NVTX ranges) on a figure off the time
    axis, which a double-click and the keys could not move (QA, 2026-12-06). It says what the window holds, at the
    window, on the time axis; the whole trace draws its ranges."""
    trace = load_trace(SAMPLES / "nsys2022.4_cpu_llm_server_nvtx.sqlite")
    assert len(trace.bundle.nvtx_ranges) == 195 and trace.bundle.kernels.empty
    fig = timeline_figure(trace, ViewState(t0_ns=300_000_000, t1_ns=400_000_000), (300_000_000, 400_000_000))
    assert [a.text for a in fig.layout.annotations if a.text.startswith(("Nothing", "This trace"))] == [
        "Nothing recorded in this window: the trace's activity runs from 0.024825 to 0.180525 s"
    ]  # the first NVTX range's start (24,825,070 ns) and the last one's end (180,525,489 ns)
    r = trace.bundle.nvtx_ranges
    assert (r["start_ns"].min(), r["end_ns"].max()) == (24_825_070, 180_525_489)
    assert fig.layout.meta["time_axis"] is True and tuple(fig.layout.xaxis.range) == (0.3, 0.4)
    assert fig.layout.xaxis.visible is True
    whole = timeline_figure(trace, ViewState(), (24_825_070, 180_525_489))
    assert [(t.name, len(t.x)) for t in whole.data][0] == ("NVTX ranges (colour = name)", 152)  # 195, some merged


def test_merged_bars_of_a_window_with_hidden_ranges_say_their_counts_leave_those_out():
    """QA, 2026-12-07: on a 2M trace a merged bar said "13 NVTX ranges" where the SQLite holds 39: only the 1,500
    longest ranges of the window are drawn, and the merged bar counted those."""
    trace = load_trace(nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite"))
    fig = build_view(trace, ViewState()).timeline  # the whole trace, as the page opens
    status = " ".join(a.text for a in fig.layout.annotations if a.name == "status").replace("<br>", " ")
    assert "17,618 shorter NVTX ranges hidden at this scale (showing the 1,500 longest)" in status
    nvtx = next(t for t in fig.data if t.name == "NVTX ranges (colour = name)" and t.showlegend is False)
    merged = [h for h in nvtx.hovertext if "drawn as one bar" in h]
    assert merged and all(
        "<br>only the longest ranges are drawn at this scale: shorter ones here are not counted" in h for h in merged
    )


def test_a_summarys_nvtx_totals_say_whole_trace_whatever_window_the_link_holds():
    """QA, 2026-12-07: a click on the seed summary's Gantt put its window into the link, and the caption of the
    NVTX totals chart (a summary's "timeline") then read "window 1.088333–1.175553 s" over whole-trace totals."""
    from dashboard.render.timeline import timeline_view_spec

    spec, filename = timeline_view_spec(load_trace(SEED), ViewState(t0_ns=1_088_333_000, t1_ns=1_175_553_000))
    caption = next(a["text"] for a in spec["layout"]["annotations"] if "tracedash ·" in a["text"])
    assert "whole trace" in caption and "window" not in caption and filename.endswith("_timeline_whole")


def test_a_caption_names_gpu_models_never_the_placeholder_names_of_unnamed_devices():
    """QA, 2026-12-07: the ROCm vLLM trace names its 8 devices only "GPU 0" … "GPU 7" (no model) and runs work on GPU
    2 alone; its captions read "GPU 0, GPU 1 (+6)"."""
    from dashboard.render.base import view_caption

    rocm = load_trace(DATA / "kineto" / "rocm_vllm_decode_graph_replay.json.gz")
    assert rocm.meta.gpus[2] == "GPU 2" and len(rocm.meta.gpus) == 8
    assert view_caption(rocm, ViewState(), None) == "tracedash · rocm_vllm_decode_graph_replay.json.gz · whole trace"
    h100 = load_trace(SAMPLES / "h100_qwen1.5_0.5b_chat.json.gz")
    assert view_caption(h100, ViewState(), None) == (
        "tracedash · h100_qwen1.5_0.5b_chat.json.gz · NVIDIA H100 80GB HBM3 · whole trace"
    )


def test_pixel_runs_merge_only_neighbours_under_a_pixel_in_one_lane():
    """Rows in no order; lanes by label. At 10 ns a pixel: a's [0,5) and [8,12) (3 ns apart) share a bar, [30,35)
    (18 ns after) does not; [36,100) is wide: its own bar, and [101,104) after it is not merged into it; b's range
    is alone in its lane. Bars are numbered in (lane, start) order, lanes by first appearance."""
    lanes = ["a", "b", "a", "a", "a", "a"]
    starts = np.array([30, 9, 8, 36, 0, 101])
    ends = np.array([35, 11, 12, 100, 5, 104])
    assert pixel_runs(lanes, starts, ends, 10.0).tolist() == [1, 4, 0, 2, 0, 3]
    assert pixel_runs(lanes, starts, ends, 0.0).tolist() == [2, 5, 1, 3, 0, 4]  # no scale: nothing merged
    assert pixel_runs(lanes, starts, ends, 19.0).tolist() == [0, 3, 0, 1, 0, 2]  # 18 ns apart now joins
    assert pixel_runs([], np.array([], np.int64), np.array([], np.int64), 10.0).tolist() == []


def test_the_whole_nvtx_sample_draws_its_sub_pixel_neighbours_as_one_bar_and_a_zoom_splits_them():
    """The NVTX sample's 195 ranges over 155.7 ms (~120 µs a pixel): each bar of several ranges spans its members,
    says how many it holds by name, and is not labelled; every range is in one bar. A window of 1 ms draws each."""
    trace = load_trace(SAMPLES / "nsys2022.4_cpu_llm_server_nvtx.sqlite")
    r = trace.bundle.nvtx_ranges
    whole = timeline_figure(trace, ViewState(), (24_825_070, 180_525_489))
    nvtx = next(t for t in whole.data if t.name == "NVTX ranges (colour = name)" and t.showlegend is False)
    counts = [
        int(h.split("</b>")[0].removeprefix("<b>").split()[0].replace(",", "")) if " NVTX ranges</b>" in h else 1
        for h in nvtx.hovertext
    ]
    assert sum(counts) == 195 and len(counts) == 152 and max(counts) > 1
    merged = [i for i, k in enumerate(counts) if k > 1]
    assert all(nvtx.text[i] == "" for i in merged)
    for i in merged:  # the bar spans its members: their starts and ends are in the trace
        lo_s, hi_s = nvtx.base[i], nvtx.base[i] + nvtx.x[i]
        inside = r[(r["start_ns"] >= round(lo_s * 1e9) - 1) & (r["end_ns"] <= round(hi_s * 1e9) + 1)]
        assert len(inside) >= counts[i]
        assert "drawn as one bar: each is under a pixel wide at this scale" in nvtx.hovertext[i]
    assert not any("only the longest ranges are drawn" in h for h in nvtx.hovertext)  # none hidden here
    lo = int(r["start_ns"].iloc[100])
    narrow = timeline_figure(trace, ViewState(), (lo, lo + 1_000_000))
    drawn = next(t for t in narrow.data if t.name == "NVTX ranges (colour = name)" and t.showlegend is False)
    in_view = ((r["start_ns"] < lo + 1_000_000) & (r["end_ns"] > lo)).sum()
    assert len(drawn.x) == in_view and not any("drawn as one bar" in h for h in drawn.hovertext)
