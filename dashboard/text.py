"""Small wording helpers shared by every layer (no pandas, no Dash)."""

from __future__ import annotations


def count_noun(count: int, one: str, many: str | None = None) -> str:
    """``"1 blocking call"``, ``"3 blocking calls"``, ``"1,200 dispatches"`` (``many``: the plural's last
    word when it is not ``one``'s last word + "s")."""
    if count == 1:
        return f"1 {one}"
    head = one.rpartition(" ")[0]
    return f"{count:,} " + (f"{head} {many}".strip() if many else one + "s")
