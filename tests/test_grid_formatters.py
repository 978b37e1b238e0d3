"""AG Grid value formatters only use what dash-ag-grid's expression sandbox provides.

dash-ag-grid evaluates a ``{"function": "..."}`` string with a scope of ``params``, ``d3`` and ``agGrid`` (plus
``window.dashAgGridFunctions``), not the browser's globals. A formatter naming ``Number``, ``Math`` or ``String``
throws for every value and AG Grid silently shows the raw value instead: the kernel table showed 272317378 (ns)
under "Total (ms)" and 50.88136159774843 under "% of kernel time".
"""

from __future__ import annotations

import re

import pytest

from dashboard.app import compare_layout, layout
from dashboard.app.views import findings

ALLOWED = {"params", "d3", "agGrid", "null", "undefined", "true", "false", "typeof"}
_STRING = re.compile(r"'(?:\\.|[^'\\])*'|\"(?:\\.|[^\"\\])*\"")
_FREE_NAME = re.compile(r"(?<![.\w$])[A-Za-z_$][\w$]*")


def _functions(obj):
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key == "function" and isinstance(value, str):
                yield value
            else:
                yield from _functions(value)
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            yield from _functions(item)


def _free_names(expr: str) -> set[str]:
    return set(_FREE_NAME.findall(_STRING.sub("''", expr)))


def _all_formatters() -> list[str]:
    found = []
    for module in (layout, compare_layout, findings):
        for name, value in vars(module).items():
            if name.isupper() or name.startswith("_"):
                found.extend(_functions(value))
    return sorted(set(found))


def test_the_scan_sees_the_kernel_table_formatters():
    exprs = _all_formatters()
    assert any("1e6" in e for e in exprs)  # Total (ms)
    assert any("' %'" in e for e in exprs)  # % of kernel time
    assert any("' µs'" in e for e in exprs)  # findings evidence durations
    assert _free_names("Number.isNaN(params.value) ? 'Math' : d3.format(',')(params.value)") == {
        "Number",
        "params",
        "d3",
    }


@pytest.mark.parametrize("expr", _all_formatters())
def test_formatter_names_only_sandbox_scope(expr):
    assert _free_names(expr) <= ALLOWED, expr
