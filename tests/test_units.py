"""Exact values of every ``units`` format: what each unit boundary, sign, rounding and missing value writes."""

import math

import pandas as pd
import pytest

from dashboard import units


@pytest.mark.parametrize(
    "ns, text",
    [
        (0, "0 ns"),
        (812, "812 ns"),
        (999.4, "999 ns"),
        (1_000, "1.00 µs"),
        (4_210, "4.21 µs"),
        (999_994, "999.99 µs"),
        (1_000_000, "1.000 ms"),
        (3_507_000, "3.507 ms"),
        (999_999_000, "999.999 ms"),
        (1_000_000_000, "1.000 s"),
        (1_234_000_000, "1.234 s"),
        (3_600_000_000_000, "3600.000 s"),
        (-4_210, "-4.21 µs"),
        (-3_507_000, "-3.507 ms"),
    ],
)
def test_duration_has_fixed_decimals_per_unit(ns, text):
    assert units.duration(ns) == text


@pytest.mark.parametrize(
    "ns, text",
    [
        (0, "0 ns"),
        (420, "420 ns"),
        (999, "999 ns"),
        (1_000, "1 µs"),
        (850_000, "850 µs"),
        (1_000_000, "1 ms"),
        (12_340_000, "12.3 ms"),
        (12_350_001, "12.4 ms"),
        (6_390_000_000, "6.39 s"),
        (1_234_000_000_000, "1.23e+03 s"),
        (-12_340_000, "-12.3 ms"),
        (2.9e6, "2.9 ms"),  # a float ns is cut to whole ns first
    ],
)
def test_duration_short_has_three_significant_digits(ns, text):
    assert units.duration_short(ns) == text


def test_the_two_duration_styles_differ_only_in_digits():
    assert (units.duration(12_345_678), units.duration_short(12_345_678)) == ("12.346 ms", "12.3 ms")


@pytest.mark.parametrize(
    "value, kwargs, text",
    [
        (42, {}, "42.0 %"),
        (25.0, {}, "25.0 %"),
        (89.4249, {"digits": 2}, "89.42 %"),
        (0.05, {"digits": 0}, "0 %"),
        (3.25, {"signed": True}, "+3.2 %"),
        (-3.25, {"signed": True}, "-3.2 %"),
        (0, {"signed": True}, "+0.0 %"),
        (1.5, {"signed": True, "unit": " pp"}, "+1.5 pp"),
        (None, {}, "n/a"),
        (math.nan, {}, "n/a"),
        (math.inf, {}, "n/a"),
        (pd.NA, {"signed": True}, "n/a"),
        ("12.5", {}, "12.5 %"),
        ("x", {}, "n/a"),
    ],
)
def test_pct(value, kwargs, text):
    assert units.pct(value, **kwargs) == text


def test_is_na_and_na():
    assert [units.is_na(v) for v in (None, math.nan, pd.NA, -math.inf, "x", 0, 0.0, "1")] == [
        True,
        True,
        True,
        True,
        True,
        False,
        False,
        False,
    ]
    assert units.NA == "n/a"


def test_instant_is_seconds_to_the_microsecond():
    assert units.instant(1_234_567_891) == "1.234568 s"
    assert units.instant(0) == "0.000000 s"
    assert units.instant(500) == "0.000000 s"
    assert units.instant(1_500) == "0.000002 s"


@pytest.mark.parametrize(
    "window, exact, text",
    [
        ((1_000_000_000, 1_020_000_000), True, "1.000000–1.020000 s"),
        ((80, 520), True, "80–520 ns"),
        ((1_000_000, 1_009_999), True, "1,000,000–1,009,999 ns"),
        ((1_000_000, 1_010_000), True, "0.001000–0.001010 s"),
        ((80, 520), False, "0.000000–0.000001 s"),
        ((1_000_000_000, 1_020_000_000), False, "1.000000–1.020000 s"),
    ],
)
def test_window(window, exact, text):
    assert units.window(window, exact=exact) == text


def test_count_says_one_in_the_singular_and_groups_thousands():
    assert units.count(1, "GPU") == "1 GPU"
    assert units.count(2, "host thread") == "2 host threads"
    assert units.count(0, "row") == "0 rows"
    assert units.count(1, "dispatch", "dispatches") == "1 dispatch"
    assert units.count(1_200, "dispatch", "dispatches") == "1,200 dispatches"
    assert units.count(3, "invalid kernel row") == "3 invalid kernel rows"
    assert units.count(2, "blocking call", "calls") == "2 blocking calls"
    assert units.count(1_000_000, "kernel") == "1,000,000 kernels"


def test_count_of_a_plural_noun_phrase():
    assert units.count_of(1, "MTIA runtime calls") == "1 MTIA runtime call"
    assert units.count_of(823, "MTIA runtime calls") == "823 MTIA runtime calls"
    assert units.count_of(1_313, "MTIA device events") == "1,313 MTIA device events"
    assert units.count_of(1, "metadata") == "1 metadata"  # no plural "s" to drop
