"""Kernel categories from editable regex rules (``dashboard/rules/kernel_categories.toml``)."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np
import pandas as pd

from dashboard.analysis.intervals import PART_ROWS

OTHER = "other"
CATEGORY_ORDER = (
    "GEMM",
    "attention",
    "convolution",
    "MoE",
    "normalisation",
    "communication",
    "memory",
    "elementwise/activation",
    OTHER,
)


@dataclass(frozen=True)
class Rule:
    """One rule: kernels whose name matches ``pattern`` belong to ``category``."""

    category: str
    pattern: str
    regex: re.Pattern


@dataclass(frozen=True)
class RuleSet:
    """Rules in order, plus ``generic``: short names that say nothing about the operation (their
    demangled name is tried first; None when the file sets no ``generic_short_names``)."""

    version: int
    rules: tuple[Rule, ...]
    generic: re.Pattern | None = None


def parse_rules(text: str) -> RuleSet:
    """Parse a rules file (TOML: ``version``, optional ``generic_short_names`` regex, and ``[[rule]]``
    tables with ``category``, ``pattern``).

    Raises:
        ValueError: malformed TOML, a rule without category/pattern, or an invalid regex.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"kernel category rules: {exc}") from None
    rules = []
    for i, r in enumerate(data.get("rule", [])):
        if not isinstance(r, dict) or not isinstance(r.get("category"), str) or not isinstance(r.get("pattern"), str):
            raise ValueError(f"kernel category rules: rule {i} needs a category and a pattern")
        try:
            rules.append(Rule(r["category"], r["pattern"], re.compile(r["pattern"], re.IGNORECASE)))
        except re.error as exc:
            raise ValueError(f"kernel category rules: rule {i} ({r['category']}): bad pattern: {exc}") from None
    generic = data.get("generic_short_names")
    try:
        generic_re = re.compile(generic, re.IGNORECASE) if isinstance(generic, str) and generic else None
    except re.error as exc:
        raise ValueError(f"kernel category rules: generic_short_names: bad pattern: {exc}") from None
    return RuleSet(int(data.get("version", 0)), tuple(rules), generic_re)


@lru_cache(maxsize=1)
def default_rules() -> RuleSet:
    """The rules shipped with the package."""
    return parse_rules(resources.files("dashboard.rules").joinpath("kernel_categories.toml").read_text("utf-8"))


def categorize(short_name: str, full_name: str = "", rules: RuleSet | None = None) -> tuple[str, str]:
    """``(category, matching rule)`` of one kernel; ``("other", "")`` when no rule matches. Results
    are kept per (names, rules): a zoom categorises the same few hundred names again and again.

    Example:
        >>> categorize("flash_fwd_kernel", "void flash::flash_fwd_kernel<cutlass::bfloat16_t>()")[0]
        'attention'
    """
    return _categorize(short_name, full_name, rules or default_rules())


@lru_cache(maxsize=8192)  # distinct (short, demangled) name pairs: a few hundred to a few thousand per trace
def _categorize(short_name: str, full_name: str, rules: RuleSet) -> tuple[str, str]:
    order = (short_name, full_name)
    if full_name and rules.generic is not None and rules.generic.search(short_name or ""):
        order = (full_name, short_name)  # a generic launcher: the demangled name names the operation
    for name in order:
        for rule in rules.rules:
            if name and rule.regex.search(name):
                return (
                    rule.category,
                    f"{rule.category}: /{rule.pattern}/ on {'short' if name is short_name else 'demangled'} name",
                )
    return OTHER, ""


def _pairs(short_codes: np.ndarray, full_codes: np.ndarray, n_full: int, a: int) -> np.ndarray:
    """The (short, full) pair numbers of rows ``a`` to ``a + PART_ROWS``."""
    pair = short_codes[a : a + PART_ROWS].astype(np.int64) * n_full
    pair += full_codes[a : a + PART_ROWS]
    return pair


def categorize_kernels(kernels: pd.DataFrame, rules: RuleSet | None = None) -> pd.DataFrame:
    """Category and matching rule of every kernel row (evaluated once per distinct name pair).

    Returns:
        Frame aligned with ``kernels`` (same index): category and rule, as categoricals of str.
    """
    if kernels.empty:
        return pd.DataFrame(
            {"category": pd.Series([], dtype=object), "rule": pd.Series([], dtype=object)}, index=kernels.index
        )
    short = pd.Categorical(kernels["short_name"])
    full = pd.Categorical(kernels["name"])
    n_full = len(full.categories) + 1
    # One integer per (short, full) pair from the categorical codes: no string work per row. The distinct pairs
    # (in order of first appearance) a part of the rows at a time: 10M kernels never hash 10M pairs at once.
    uniques = pd.unique(
        np.concatenate(
            [pd.unique(_pairs(short.codes, full.codes, n_full, a)) for a in range(0, len(kernels), PART_ROWS)]
        )
    )
    results = [
        categorize(
            str(short.categories[u // n_full]) if u // n_full >= 0 else "",
            str(full.categories[u % n_full]) if u % n_full < len(full.categories) else "",
            rules,
        )
        for u in uniques
    ]

    order = np.argsort(uniques, kind="stable")
    ordered = uniques[order]

    def column(values: list[str]) -> pd.Categorical:
        idx, names = pd.factorize(np.array(values, dtype=object))
        per_pair = idx[order].astype(np.int8 if len(names) < 128 else np.int32)  # by sorted pair
        out = np.empty(len(kernels), dtype=per_pair.dtype)
        for a in range(0, len(kernels), PART_ROWS):
            out[a : a + PART_ROWS] = per_pair[np.searchsorted(ordered, _pairs(short.codes, full.codes, n_full, a))]
        return pd.Categorical.from_codes(out, categories=names)

    return pd.DataFrame(
        {"category": column([r[0] for r in results]), "rule": column([r[1] for r in results])}, index=kernels.index
    )
