"""Wait predicates for ``page.wait_for_function`` that never throw.

Playwright fails a wait at once when its predicate throws, and Dash redraws a figure or a grid by
replacing it: for a moment there is no plot div, no ``_fullData`` or no grid API. Every predicate
here answers ``false`` in that moment instead of throwing, so a wait only fails on its timeout.
"""


def present(locator, timeout: float = 30000):
    """``locator``, once it matches an element: wait with this before an ``expect`` on an element that is not on
    the page yet. Playwright's ``expect`` on a missing element takes an ARIA snapshot of the whole page at every
    poll, ~0.4 s of the renderer's CPU per second of waiting on a dashboard page (measured; ``make test`` is
    CPU-bound), where ``wait_for`` costs ~0.01 s."""
    locator.first.wait_for(state="attached", timeout=timeout)
    return locator


def until(expr: str) -> str:
    """A predicate that is ``expr`` (a JS expression), or false while evaluating it throws."""
    return f"() => {{ try {{ return Boolean({expr}); }} catch (e) {{ return false; }} }}"


def figure_js(graph_id: str, expr: str) -> str:
    """A function of the drawn figure ``gd`` under ``#graph_id``: ``expr``, or false while none is drawn.

    For ``page.evaluate`` too, which does not wait: there it answers false when no figure is drawn yet."""
    return (
        f"() => {{ const gd = document.querySelector('#{graph_id} .js-plotly-plot'); "
        f"if (!gd || !gd.layout || !gd._fullData) return false; "
        f"try {{ return {expr}; }} catch (e) {{ return false; }} }}"
    )


def grid_js(grid_id: str, condition: str) -> str:
    """A predicate on an AG Grid's displayed row count ``n`` (and its ``api``); false before the grid exists."""
    return (
        f"() => {{ try {{ const api = dash_ag_grid.getApi('{grid_id}'); const n = api.getDisplayedRowCount(); "
        f"return Boolean({condition}); }} catch (e) {{ return false; }} }}"
    )


def zoom(page, graph_id: str, lo_s: float, hi_s: float, timeout: float = 30000) -> None:
    """Zoom figure ``graph_id`` to ``[lo_s, hi_s]`` as a drag would (``Plotly.relayout``), once the figure is
    drawn and dcc.Graph listens to it: a relayout sent to a figure that is not drawn yet (or being replaced), or
    before dcc.Graph has bound its ``plotly_relayout`` handler (it does so after the draw's promise resolves,
    which a busy machine can delay), would be lost without a word."""
    page.wait_for_function(
        figure_js(graph_id, f"{BOUND} && (Plotly.relayout(gd, {{'xaxis.range': [{lo_s}, {hi_s}]}}), true)"),
        timeout=timeout,
    )


def settled(page, graph_id: str, expr: str = "true", timeout: float = 30000) -> None:
    """Wait until figure ``graph_id`` is drawn, listened to and not being replaced, and ``expr`` holds of it: do
    this before a real pointer gesture (a drag, a double click), which a figure being replaced by a server answer
    loses without a word, as it would a user's."""
    page.wait_for_function(figure_js(graph_id, f"{BOUND} && ({expr})"), timeout=timeout)


# dcc.Graph binds its handlers together (bindEvents), after the draw; 'plotly_clickannotation' is bound by it alone
# (Plotly and our own script may listen to 'plotly_relayout' earlier), and a graph being redrawn or resized carries
# the class dash-graph--pending.
BOUND = (
    "gd._ev && gd._ev.listeners('plotly_clickannotation').length > 0 && !gd.classList.contains('dash-graph--pending')"
)
