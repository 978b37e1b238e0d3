"""Write pytest's assertion-rewritten bytecode of every test module and conftest once, before `make test`'s workers
start, split over the machine's cores.

Why: where PYTHONDONTWRITEBYTECODE is set (this machine sets it), pytest caches no rewritten module, so each of the
three workers rewrote all of them: ~5.5 CPU-s each of its ~10 s collection. pytest reads a cached file whatever
that setting, and checks it against its source's hash, so a stale or foreign file is only ignored. Uses pytest's
own (private) rewrite functions; should they change, this writes nothing, says why, and exits 0: the workers then
rewrite the modules themselves, as before.

Usage: python tests/rewrite_cache.py [FILE ...]   (default: tests/**/test_*.py, tests/**/conftest.py and the plugin
modules pyproject.toml's addopts name with -p, which pytest rewrites too)
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _rewrite(paths: list[Path]) -> int:
    """Rewrite and cache ``paths``; how many were written."""
    from _pytest.assertion.rewrite import PYC_TAIL, _rewrite_test, _write_pyc, get_cache_dir

    class _Quiet:  # what _write_pyc asks of pytest's assertion state
        @staticmethod
        def trace(_message: str) -> None:
            pass

    written = 0
    for path in paths:
        cache = get_cache_dir(path)
        cache.mkdir(exist_ok=True)
        source_hash, code = _rewrite_test(path, None)  # no config: the rewrite pytest does with the default ini
        written += _write_pyc(_Quiet, code, source_hash, cache / (path.name[:-3] + PYC_TAIL))
    return written


def _plugin_modules() -> list[Path]:
    """The files of the plugins pyproject.toml's pytest addopts load by name (``-p NAME``)."""
    import importlib.util
    import re
    import tomllib

    options = tomllib.loads((TESTS.parent / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    names = [n for n in re.findall(r"-p\s+(\S+)", options.get("addopts", "")) if not n.startswith("no:")]
    specs = [importlib.util.find_spec(n) for n in names]
    return [Path(s.origin) for s in specs if s is not None and s.origin and s.origin.endswith(".py")]


def main(argv: list[str]) -> int:
    try:
        paths = [Path(a).resolve() for a in argv] or sorted(
            p
            for p in TESTS.rglob("*.py")
            if (p.name.startswith("test_") or p.name == "conftest.py") and "data" not in p.relative_to(TESTS).parts
        ) + _plugin_modules()
        cores = min(len(os.sched_getaffinity(0)), len(paths)) or 1
        if cores == 1:
            written = _rewrite(paths)
        else:
            with ProcessPoolExecutor(cores) as pool:  # sorted by name: big and small files alike in each part
                written = sum(pool.map(_rewrite, [paths[i::cores] for i in range(cores)]))
    except Exception as exc:  # noqa: BLE001 - pytest's private API moved: the workers rewrite for themselves
        _tell(f"rewrite_cache: nothing cached ({type(exc).__name__}: {exc})")
        return 0
    if written < len(paths):
        _tell(f"rewrite_cache: {written} of {len(paths)} modules cached")
    return 0


def _tell(line: str) -> None:
    try:
        print(line, file=sys.stderr, flush=True)
    except (AttributeError, OSError, ValueError):  # stderr closed or full: the exit code stays 0 all the same
        pass


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
