"""The layers stay clean: only app imports dash; loaders/analysis/model never import plotly;
figures never call analysis or loaders; every public function is documented."""

import ast
import inspect
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "dashboard"


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def modules(sub: str) -> list[Path]:
    base = PKG / sub
    return sorted(base.rglob("*.py")) if base.is_dir() else [PKG / f"{sub}.py"]


@pytest.mark.parametrize("layer, forbidden", [
    ("model", ("dash", "plotly", "dashboard.")),
    ("errors", ("dash", "plotly", "dashboard.")),
    ("loaders", ("dash", "plotly", "dashboard.analysis", "dashboard.figures", "dashboard.app", "dashboard.render")),
    ("analysis", ("dash", "plotly", "dashboard.loaders", "dashboard.figures", "dashboard.app", "dashboard.data",
                  "dashboard.render", "sqlite3")),
    ("data", ("dash", "plotly", "dashboard.figures", "dashboard.app", "dashboard.render")),
    ("figures", ("dash", "dashboard.analysis", "dashboard.loaders", "dashboard.app", "sqlite3")),
    ("render", ("dash", "dashboard.app", "sqlite3")),
])
def test_layer_imports(layer, forbidden):
    for path in modules(layer):
        bad = sorted(n for n in imports_of(path) for f in forbidden
                     if (n == f or n.startswith(f + ".") or (f.endswith(".") and n.startswith(f)))
                     and not (layer == "model" and n == "dashboard.model"))
        assert bad == [], f"{path.relative_to(PKG)} imports {bad}"


def test_public_functions_have_docstrings():
    import importlib

    missing = []
    for path in sorted(PKG.rglob("*.py")):
        name = "dashboard." + ".".join(path.relative_to(PKG).with_suffix("").parts)
        name = name.removesuffix(".__init__").removesuffix(".__main__")
        if name.endswith("__main__") or path.name == "__main__.py":
            continue
        mod = importlib.import_module(name)
        for attr, obj in vars(mod).items():
            if attr.startswith("_") or not inspect.isfunction(obj) or obj.__module__ != mod.__name__:
                continue
            if not (obj.__doc__ or "").strip():
                missing.append(f"{name}.{attr}")
    assert missing == []
