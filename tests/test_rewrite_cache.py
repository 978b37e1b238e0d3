"""``tests/rewrite_cache.py``: the rewritten test modules `make test` caches before its workers start."""

import subprocess
import sys

import pytest
from _pytest.assertion.rewrite import PYC_TAIL, _read_pyc

from paths import ROOT


def test_the_cached_module_is_one_pytest_takes_with_its_asserts_rewritten(tmp_path):
    src = tmp_path / "test_sample.py"
    src.write_text("def test_x():\n    a = 1\n    assert a == 2\n")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "rewrite_cache.py"), str(src)], capture_output=True, text=True
    )
    assert (proc.returncode, proc.stderr) == (0, "")
    code = _read_pyc(src, tmp_path / "__pycache__" / f"test_sample{PYC_TAIL}")
    assert code is not None  # pytest's own check: its magic number, flags and the source's hash
    module = {}
    exec(code, module)
    with pytest.raises(AssertionError, match=r"assert 1 == 2"):  # a plain assert would say nothing
        module["test_x"]()
    src.write_text(src.read_text() + "\n")
    assert _read_pyc(src, tmp_path / "__pycache__" / f"test_sample{PYC_TAIL}") is None  # stale: pytest rewrites


def test_a_checkout_under_a_folder_named_data_is_cached_too(tmp_path):
    tests = tmp_path / "data" / "repo" / "tests"  # only the tests' own data/ folder is left out
    (tests / "data").mkdir(parents=True)
    (tests.parent / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = "-p no:cacheprovider"\n')
    (tests / "rewrite_cache.py").write_text((ROOT / "tests" / "rewrite_cache.py").read_text())
    for path in (tests / "test_a.py", tests / "data" / "test_fixture.py"):
        path.write_text("def test_a():\n    assert True\n")
    proc = subprocess.run([sys.executable, str(tests / "rewrite_cache.py")], capture_output=True, text=True)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert [p.name for p in (tests / "__pycache__").iterdir()] == [f"test_a{PYC_TAIL}"]
    assert not (tests / "data" / "__pycache__").exists()
