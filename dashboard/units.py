"""How every layer writes a quantity as text: durations, percentages, windows and counts (no pandas, no Dash).

Two duration styles: ``duration`` (fixed decimals per unit, "3.507 ms": tables, hovers, cards, figures, where
values are read side by side) and ``duration_short`` (3 significant digits, "12.3 ms": findings' prose).
"""

from __future__ import annotations

import math

NA = "n/a"  # a ratio without a value (zero denominator), in every output


def duration(ns: float) -> str:
    """Human duration with fixed decimals per unit: '812 ns', '4.21 µs', '3.507 ms', '1.234 s'."""
    ns = float(ns)
    if abs(ns) < 1e3:
        return f"{ns:.0f} ns"
    if abs(ns) < 1e6:
        return f"{ns / 1e3:.2f} µs"
    if abs(ns) < 1e9:
        return f"{ns / 1e6:.3f} ms"
    return f"{ns / 1e9:.3f} s"


def duration_short(ns: int) -> str:
    """ns with 3 significant digits in the unit that fits (``6.39 s``, ``12.3 ms``, ``850 µs``, ``420 ns``)."""
    ns = int(ns)
    for unit, div in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(ns) >= div:
            return f"{ns / div:.3g} {unit}"
    return f"{ns} ns"


def is_na(value) -> bool:
    """True for None, pandas NA and NaN: a ratio without a value."""
    if value is None:
        return True
    try:
        return not math.isfinite(float(value))
    except (TypeError, ValueError):
        return True


def pct(value, digits: int = 1, *, signed: bool = False, unit: str = " %") -> str:
    """A percentage as text: ``"42.0 %"``, or ``"n/a"`` when it has no value (see ``is_na``).

    Args:
        digits: decimals. signed: always show the sign (deltas). unit: ``" %"`` or ``" pp"``.
    """
    if is_na(value):
        return NA
    return f"{float(value):{'+' if signed else ''}.{digits}f}{unit}"


def instant(ns: int) -> str:
    """A time on the session timeline in seconds to the µs (``1.234567 s``): hovers, search hits, notes."""
    return f"{ns / 1e9:.6f} s"


def window(window: tuple[int, int], *, exact: bool = True) -> str:
    """A window as a caption writes it: seconds to the µs (``1.000000–1.020000 s``), or integer ns
    when it is shorter than 10 µs (``80–520 ns``), so its edges always read exactly. ``exact=False``:
    always seconds to the µs (a search bin's hover, the report's header, the step table's scope)."""
    a, b = window
    if exact and b - a < 10_000:
        return f"{a:,}–{b:,} ns"
    return f"{a / 1e9:.6f}–{b / 1e9:.6f} s"


def count_of(count: int, many: str) -> str:
    """``count`` written with a plural noun phrase that ends in "s" (``"MTIA runtime calls"``): ``"1 MTIA runtime
    call"``, ``"823 MTIA runtime calls"``."""
    return f"{count:,} {many[:-1] if count == 1 and many.endswith('s') else many}"


def count(count: int, one: str, many: str | None = None) -> str:
    """``"1 blocking call"``, ``"3 blocking calls"``, ``"1,200 dispatches"`` (``many``: the plural's last
    word when it is not ``one``'s last word + "s")."""
    if count == 1:
        return f"1 {one}"
    head = one.rpartition(" ")[0]
    return f"{count:,} " + (f"{head} {many}".strip() if many else one + "s")
