"""Ratios: one rule for every percentage tracedash shows (its text: ``units.pct``).

A ratio whose denominator is zero (no GPU work, an empty window, no kernel time) has no value: it is
``None`` here and ``"n/a"`` in every output (cards, tables, CLI, summaries), never ``0.00 %``::

    share_pct(50, 200) -> 25.0        units.pct(25.0) -> "25.0 %"
    share_pct(0, 0)    -> None        units.pct(None) -> "n/a"
"""

from __future__ import annotations

import math


def share_pct(part, whole) -> float | None:
    """``100 * part / whole``, or None when ``whole`` is 0, negative, missing or NaN (or ``part`` is
    missing/NaN)."""
    try:
        p, w = float(part), float(whole)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(p) or not math.isfinite(w) or w <= 0:
        return None
    return 100.0 * p / w
