"""Small helpers shared by figure builders (unit conversion, empty states)."""

from __future__ import annotations

import functools
import html
import re
import textwrap

import numpy as np
import plotly.graph_objects as go

from dashboard.figures.theme import DEFAULT_THEME, Theme


def escape_text(value) -> str:
    """``value`` as text inside Plotly's HTML-like strings (titles, hovers, tick labels, annotations).

    ``<``, ``>`` and ``&`` become entities, so a name such as ``<script>`` shows literally and no tag
    can form. Quotes stay as they are: Plotly does not decode ``&quot;`` and would show it verbatim.
    """
    text = value if isinstance(value, str) else str(value)
    if "&" in text or "<" in text or ">" in text:  # as html.escape(text, quote=False); most names need nothing
        text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text


def s_from_ns(values) -> np.ndarray:
    """int ns -> float64 seconds (the figure layer is the only place times become floats)."""
    return np.asarray(values, dtype=np.int64).astype(np.float64) / 1e9


def empty_figure(message: str, *, title: str = "", theme: Theme = DEFAULT_THEME, height: int = 240) -> go.Figure:
    """A figure with no data and a centred explanation (never a blank box)."""
    # Plotly validates every layout key as it is set (~8 ms a figure, several per page sent before its trace is
    # loaded): each figure is a copy of one validated once, made without validating it again (~0.7 ms).
    key = (message, title, height, repr(theme))  # a Theme holds dicts: not hashable itself
    layout = _EMPTY_FIGURES.get(key)
    if layout is None:
        if len(_EMPTY_FIGURES) >= 256:  # messages may name traces: bounded
            _EMPTY_FIGURES.clear()
        layout = _EMPTY_FIGURES[key] = _empty_json(message, title, theme, height)
    return go.Figure(layout, _validate=False)


_EMPTY_FIGURES: dict[tuple, dict] = {}


def _empty_json(message: str, title: str, theme: Theme, height: int) -> dict:
    fig = go.Figure()
    fig.update_layout(
        **theme.base_layout(
            title=dict(text=title, x=0.01, font=dict(size=14)),
            height=height,
            xaxis=dict(visible=False),
            yaxis=dict(visible=False),
            annotations=[
                dict(
                    text=message,
                    x=0.5,
                    y=0.5,
                    xref="paper",
                    yref="paper",
                    showarrow=False,
                    font=dict(size=13, color="#52606d"),
                    align="center",
                )
            ],
        )
    )
    return fig.to_plotly_json()


PENDING_TEXT = "Drawn once the trace is loaded and this view computed."  # true during both waits


def pending_figure(height: int = 240) -> go.Figure:
    """What a figure shows before its view first renders (a page sent before its trace was in memory): a
    line that says so, never Plotly's empty axes."""
    return empty_figure(PENDING_TEXT, height=height)


CHAR_EM = 0.62  # average character width / font size (generous for the UI fonts)
PROSE_EM = 0.54  # the same for a sentence (lower case and spaces: Arial/Helvetica run ~0.5)
LABEL_PAD_PX = 3
MIN_LABEL_CHARS = 4


def bar_labels(names, start_ns, end_ns, ns_per_px: float, *, font_px: float = 11) -> list[str]:
    """Text to write inside each bar: the name when the bar is wide enough, elided ("…") when at
    least ``MIN_LABEL_CHARS`` characters fit, else "" (no text).

    Widths are estimated at ``CHAR_EM`` × ``font_px`` per character plus ``2 × LABEL_PAD_PX``
    padding; the browser then hides any text that still does not fit (``uniformtext`` mode
    "hide"), so a label never spills out of its bar.

    Args:
        names: one name per bar; start_ns, end_ns: the bars' times (ns).
        ns_per_px: the x scale the figure is drawn at (window ns / plot width px).
    """
    if ns_per_px <= 0:
        return [""] * len(names)
    width_px = (np.asarray(end_ns, dtype=np.float64) - np.asarray(start_ns, dtype=np.float64)) / ns_per_px
    fit = np.floor((width_px - 2 * LABEL_PAD_PX) / (CHAR_EM * font_px)).astype(np.int64)
    out = []
    for name, n in zip(names, fit):
        name = str(name)
        if n >= len(name):
            out.append(escape_text(name))
        elif n >= MIN_LABEL_CHARS:
            out.append(escape_text(name[: n - 1] + "…"))
        else:
            out.append("")
    return out


def legend_rows(names: list[str], *, font_px: float, width_px: float) -> int:
    """Rows a horizontal legend of ``names`` takes in ``width_px`` (estimate: a 40 px swatch and
    gap per entry plus 0.62 × ``font_px`` per character, generous for the UI fonts); 0 when empty."""
    if not names:
        return 0
    rows, used = 1, 0.0
    for name in names:
        w = 40 + 0.62 * font_px * len(str(name))
        if used and used + w > width_px:
            rows, used = rows + 1, 0.0
        used += w
    return rows


CAPTION_WRAP_CHARS = 110  # a half-width panel (the compare page's figures)
WIDE_CAPTION_WRAP_CHARS = 160  # a full-width figure: ~900 px of 10 px text, inside its plot on a 1280 px screen


def _caption_annotation(caption: str, margin_b: int, wrap: int) -> tuple[dict, int]:
    """The caption annotation under a plot whose bottom margin is ``margin_b`` px, and the px it adds."""
    # Long captions wrap (a plot narrowed by long tick labels would clip one long line at its right edge).
    lines = textwrap.wrap(caption, width=wrap, break_long_words=False, break_on_hyphens=False) or [""]
    annotation = dict(
        text="<br>".join(escape_text(line) for line in lines),
        xref="paper",
        yref="paper",
        x=0,
        y=0,
        xanchor="left",
        yanchor="top",
        yshift=-(margin_b + 2),
        showarrow=False,
        name="caption",
        font=dict(size=10, color="#7b8794"),
        align="left",
    )
    return annotation, 8 + 13 * len(lines)


def add_caption(fig: go.Figure, caption: str, wrap: int = CAPTION_WRAP_CHARS) -> go.Figure:
    """Write ``caption`` as small lines under the plot (wrapped at ``wrap`` characters), so an exported
    image explains itself. The plot keeps its height (lanes keep their pitch); the figure grows."""
    margin_b = (fig.layout.margin.b or 40) if fig.layout.margin else 40
    annotation, extra = _caption_annotation(caption, margin_b, wrap)
    fig.add_annotation(**annotation)
    fig.update_layout(margin=dict(b=margin_b + extra))
    if fig.layout.height:
        fig.update_layout(height=fig.layout.height + extra)
    return fig


def add_caption_spec(spec: dict, caption: str, wrap: int = CAPTION_WRAP_CHARS) -> dict:
    """``add_caption`` for a plain figure dict (changed in place and returned)."""
    layout = spec.setdefault("layout", {})
    margin = layout.setdefault("margin", {})
    margin_b = margin.get("b") or 40
    annotation, extra = _caption_annotation(caption, margin_b, wrap)
    layout["annotations"] = [*layout.get("annotations", ()), annotation]
    margin["b"] = margin_b + extra
    if layout.get("height"):
        layout["height"] += extra
    return spec


@functools.cache
def default_template() -> dict:
    """The layout template a ``go.Figure`` gets (plotly's default), as the JSON dict it sends: a plain
    figure dict carries it too, so it is drawn exactly as the same ``go.Figure``. Shared: not to be changed."""
    return go.Figure().to_dict()["layout"]["template"]


WIRE_SKIPPED_KEYS = ("geojson", "layer", "layers", "range")  # kept as lists by plotly's conversion too


def wire_figure(spec: dict) -> dict:
    """A plain figure dict as the browser receives it: numeric numpy arrays base64-encoded, as plotly's
    ``to_plotly_json`` sends them (its ``to_typed_array_spec``); arrays of strings are sent as lists.
    Changed in place and returned. Unlike plotly's own walk it does not visit each string of a hover
    or label array (thousands per zoom)."""
    from _plotly_utils.utils import to_typed_array_spec

    def walk(obj) -> None:
        items = obj.items() if isinstance(obj, dict) else enumerate(obj)
        for key, value in items:
            if isinstance(value, np.ndarray):
                if value.dtype != object and key not in WIRE_SKIPPED_KEYS:
                    obj[key] = to_typed_array_spec(value)
            elif isinstance(value, (dict, list)):
                walk(value)

    walk(spec)
    return spec


# Report-ready images (``report_layout``): sizes at 1600 px width.
REPORT_FONT_PX = 14
REPORT_TITLE_PX = 18
REPORT_LANE_PX = 30
REPORT_MAX_ASPECT = 3.0
SCREEN_HINTS = ("status",)  # annotation names that only make sense on screen (level-of-detail notes)


def screen_facts(status: str) -> str:
    """The facts of a level-of-detail line (``figures.timeline_layout.note_annotations``) for an image, which no
    one can zoom: each note without its ": zoom in …" instruction, after "At this scale:"; "" for none."""
    notes = [re.sub(r":\s*zoom in\b.*$", "", n).strip() for n in " ".join(status.split("<br>")).split(" · ")]
    notes = [n for n in notes if n]
    return ("At this scale: " + " · ".join(notes)) if notes else ""


def report_layout(fig: go.Figure, *, width: int = 1600, aspect_limit: bool = True) -> go.Figure:
    """A copy of ``fig`` laid out for a report image (PNG/SVG/PDF) ``width`` px wide.

    - on-screen hints are dropped (annotations named in ``SCREEN_HINTS``), their facts (``screen_facts``) put
      after the caption;
    - every text is at least ``REPORT_FONT_PX`` (titles ``REPORT_TITLE_PX``), including tick
      labels, legend, annotations (caption) and text inside bars;
    - y tick labels push the left margin (``automargin``), so no lane label is clipped;
    - a timeline (``layout.meta["lanes"]``) gets ``REPORT_LANE_PX`` per lane and, with
      ``aspect_limit``, a height of at least ``width / REPORT_MAX_ASPECT``;
    - the top margin holds the title and the legend's estimated rows; the bottom margin the x
      tick labels and the caption.

    Returns:
        A new figure; ``fig`` is not changed. Its ``layout.height`` is the image height to use.
    """
    out = go.Figure(fig)
    f = REPORT_FONT_PX
    kept = [a for a in out.layout.annotations if a.name not in SCREEN_HINTS]
    caption = [a for a in kept if a.name == "caption"]
    others = [a for a in kept if a.name != "caption"]
    # what the screen's level-of-detail line says is left out stays in the image, without its instructions:
    # a pasted timeline whose shorter NVTX ranges are hidden must not read as a host with nothing to do
    facts = [t for a in out.layout.annotations if a.name in SCREEN_HINTS and (t := screen_facts(a.text or ""))]
    for a in caption[:1]:
        a.text = " · ".join([a.text or "", *facts])
    for a in others:
        a.font.size = max(f, a.font.size or 0)
    ticks_px = 2 * f + 8
    if any(ax.title.text for ax in out.select_xaxes()):
        ticks_px += 2 * f
    caption_lines = 0
    plot_w = width - (out.layout.margin.l or 80) - (out.layout.margin.r or 80)
    for a in caption:  # wrapped again for the image's plot width at f px (0.6 f per character: generous)
        a.font.size = f
        a.yshift = -ticks_px
        lines = textwrap.wrap(
            " ".join((a.text or "").split("<br>")),
            width=max(40, int(plot_w / (0.6 * f))),
            break_long_words=False,
            break_on_hyphens=False,
        ) or [""]
        a.text = "<br>".join(lines)
        caption_lines += len(lines)
    out.layout.annotations = others + caption
    out.update_layout(
        font=dict(size=f),
        legend=dict(font=dict(size=f)),
        hoverlabel=dict(font_size=f),
        uniformtext=dict(minsize=f) if out.layout.uniformtext.mode else {},
    )
    subtitle = bool(out.layout.title.subtitle.text)
    if out.layout.title.text:
        out.update_layout(title=dict(font=dict(size=REPORT_TITLE_PX)))
    if subtitle:
        out.update_layout(title=dict(subtitle=dict(font=dict(size=f))))
    out.update_xaxes(tickfont=dict(size=f), title_font=dict(size=f))
    out.update_yaxes(tickfont=dict(size=f), title_font=dict(size=f), automargin=True)
    xr = out.layout.xaxis.range
    plot_px = plot_w
    for trace in out.data:
        if getattr(trace, "text", None) is not None and hasattr(trace, "textfont"):
            trace.textfont.size = f
            names = trace.meta.get("label_names") if isinstance(trace.meta, dict) else None
            if names is not None and xr is not None and plot_px > 0:  # labels fitted again at f px
                base = np.asarray(trace.base, dtype=np.float64) * 1e9
                trace.text = bar_labels(
                    [html.unescape(n) for n in names],
                    base,
                    base + np.asarray(trace.x, dtype=np.float64) * 1e9,
                    (xr[1] - xr[0]) * 1e9 / plot_px,
                    font_px=f,
                )
    meta = out.layout.meta if isinstance(out.layout.meta, dict) else {}
    margin = out.layout.margin
    names = [t.name for t in out.data if t.showlegend is not False and t.name]
    legend_top = out.layout.legend.orientation == "h" and (out.layout.legend.y or 0) >= 1
    rows = legend_rows(names, font_px=f, width_px=plot_w) if legend_top and out.layout.showlegend is not False else 0
    top = (REPORT_TITLE_PX * 2 + 8 if out.layout.title.text else 16) + (f + 10 if subtitle else 0) + rows * (f + 12)
    bottom = ticks_px + (caption_lines * (f + 6) + 10 if caption_lines else 0)
    old_plot_h = (out.layout.height or 450) - (margin.t or 0) - (margin.b or 0)
    height = max(out.layout.height or 450, top + bottom + old_plot_h)
    if meta.get("lanes"):
        height = max(height, top + bottom + REPORT_LANE_PX * int(meta["lanes"]))
        if aspect_limit:
            height = max(height, int(np.ceil(width / REPORT_MAX_ASPECT)))
    out.update_layout(margin=dict(t=max(margin.t or 0, top), b=bottom), height=int(height))
    return out
