"""Ratios and their text: one rule for every percentage tracedash shows.

A ratio whose denominator is zero (no GPU work, an empty window, no kernel time) has no value: it is
``None`` here and ``"n/a"`` in every output (cards, tables, CLI, summaries), never ``0.00 %``::

    share_pct(50, 200) -> 25.0        fmt_pct(25.0) -> "25.0 %"
    share_pct(0, 0)    -> None        fmt_pct(None) -> "n/a"
"""

from __future__ import annotations

import math

NA = "n/a"


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


def is_na(value) -> bool:
    """True for None, pandas NA and NaN: a ratio without a value."""
    if value is None:
        return True
    try:
        return not math.isfinite(float(value))
    except (TypeError, ValueError):
        return True


def fmt_pct(value, digits: int = 1, *, signed: bool = False, unit: str = " %") -> str:
    """A percentage as text: ``"42.0 %"``, or ``"n/a"`` when it has no value (see ``is_na``).

    Args:
        digits: decimals. signed: always show the sign (deltas). unit: ``" %"`` or ``" pp"``.
    """
    if is_na(value):
        return NA
    return f"{float(value):{'+' if signed else ''}.{digits}f}{unit}"
