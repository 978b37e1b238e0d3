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


@pytest.mark.parametrize(
    "layer, forbidden",
    [
        ("model", ("dash", "plotly", "dashboard.")),
        ("errors", ("dash", "plotly", "dashboard.")),
        ("units", ("dash", "plotly", "pandas", "numpy", "dashboard.")),
        ("loaders", ("dash", "plotly", "dashboard.analysis", "dashboard.figures", "dashboard.app", "dashboard.render")),
        (
            "analysis",
            (
                "dash",
                "plotly",
                "dashboard.loaders",
                "dashboard.figures",
                "dashboard.app",
                "dashboard.data",
                "dashboard.render",
                "sqlite3",
            ),
        ),
        ("data", ("dash", "plotly", "dashboard.figures", "dashboard.app", "dashboard.render")),
        ("figures", ("dash", "dashboard.analysis", "dashboard.loaders", "dashboard.app", "sqlite3")),
        ("render", ("dash", "dashboard.app", "sqlite3")),
    ],
)
def test_layer_imports(layer, forbidden):
    for path in modules(layer):
        bad = sorted(
            n
            for n in imports_of(path)
            for f in forbidden
            if (n == f or n.startswith(f + ".") or (f.endswith(".") and n.startswith(f)))
            and not (layer == "model" and n == "dashboard.model")
        )
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


def module_imports() -> dict[str, set[str]]:
    """Each dashboard module's imports of other dashboard modules, also those inside functions (a lazy
    import that closes a circle is still a circle); ``from pkg import sub`` counts as importing ``pkg.sub``."""
    names = {}
    for path in PKG.rglob("*.py"):
        name = "dashboard." + ".".join(path.relative_to(PKG).with_suffix("").parts)
        names[name.removesuffix(".__init__")] = path
    graph = {}
    for name, path in names.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        out = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                out.update(a.name for a in node.names if a.name in names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("dashboard"):
                subs = {f"{node.module}.{a.name}" for a in node.names} & names.keys()
                out.update(subs or ({node.module} & names.keys()))
        graph[name] = out - {name, "dashboard"}  # the root holds only __version__ and lazy accessors
    return graph


def test_no_import_circle():
    """No dashboard module imports, through others, itself."""
    graph = module_imports()
    circles = []
    state: dict[str, int] = {}

    def visit(node, stack):
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                circles.append(stack[stack.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert circles == []


def test_views_never_import_the_page_builder():
    graph = module_imports()
    views = [m for m in graph if m.startswith("dashboard.app.views")]
    assert views and all("dashboard.app.layout" not in graph[m] for m in views)
    assert {"dashboard.app.views", "dashboard.app.views.compare_link"} <= graph["dashboard.app.layout"]
