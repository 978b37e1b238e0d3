# tracedash: `make run` serves the dashboard on the bundled samples; `make test` runs every test.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8050

.PHONY: run test chromium clean bench

# The venv starts without pip (ensurepip costs 5 s); uv puts pip in it with the project.
$(BIN)/python:
	$(PYTHON) -m venv --without-pip $(VENV)

# uv installs the same releases as pip from the same index (PyPI) in a third of the time (12 s against 36 s for
# the test extras from an empty cache, byte-compiled alike). uv comes from the interpreter's own pip into
# .venv/uv, or, without one, from the venv's pip; if uv cannot be had at all, pip installs instead.
UV := $(VENV)/uv/bin/uv
PIP_QUIET := PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 
VENV_PIP = { test -x $(BIN)/pip || $(BIN)/python -m ensurepip --default-pip > /dev/null; }
GET_UV = test -x $(UV) || $(PIP_QUIET)$(PYTHON) -m pip install -q --target $(VENV)/uv 'uv>=0.5,<1' || \
	{ $(VENV_PIP) && $(PIP_QUIET)$(BIN)/python -m pip install -q --target $(VENV)/uv 'uv>=0.5,<1'; }
INSTALL = { { $(GET_UV); } && $(UV) pip install -q --python $(BIN)/python -e '$(1)' pip; } || \
	{ $(VENV_PIP) && $(PIP_QUIET)$(BIN)/python -m pip install -q -e '$(1)'; }
# Byte-compile what runs (this machine sets PYTHONDONTWRITEBYTECODE: uncompiled modules would be compiled again
# by every process), but not the packages' own test suites, pip or setuptools: 4,408 of 6,871 files, 7 s
# against 15 s. A file that does not compile is left to Python (the leading '-').
COMPILE = -$(BIN)/python -m compileall -q -j 0 -x '/tests?/|/pip/|/setuptools/|/_distutils_hack/' \
	"$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" > /dev/null

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(call INSTALL,.)
	$(COMPILE)
	touch $@

$(VENV)/.test-installed: pyproject.toml | $(BIN)/python
	$(call INSTALL,.[test])
	$(COMPILE)
	touch $(VENV)/.installed $@

run: $(VENV)/.installed
	$(BIN)/tracedash serve --host $(HOST) --port $(PORT)

# Debian's Chromium drives the browser tests (never `playwright install`). Its recommended packages (printing,
# Samba, udev, a notification daemon: 115 packages against 19) serve nothing headless; without them it takes 13 s
# against 34 s. Liberation fonts (a recommendation) are installed on purpose: they give the figures' Arial metrics.
# The browser tests run in its headless shell (lighter); the page-load benchmark in the browser users have.
chromium:
	@command -v chromium >/dev/null 2>&1 && command -v chromium-headless-shell >/dev/null 2>&1 || { \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		chromium chromium-headless-shell fonts-liberation; }

# Tests run in 3 parallel workers (pytest-xdist); an idle worker takes tests queued for a busy one (worksteal),
# so a few long browser tests do not finish alone at the end. (4 workers were not quicker on 2026-12-06, 288-298 s
# against 264-272 s of pytest: docs/benchmarks.md, `make test`.)
# The venv and Chromium (when it is missing) are installed side by side: both wait on downloads.
# ruff (configured in pyproject.toml) checks and format-checks the package, the tests and the benchmarks first.
# The package is byte-compiled once before the run: where PYTHONDONTWRITEBYTECODE is set, each of the ~50 Python
# processes of a run (3 workers, the servers and CLIs the tests start) would otherwise compile it again (0.16 CPU-s each).
# For the same reason pytest caches no assertion-rewritten test module there: tests/rewrite_cache.py writes them once,
# on both cores (3.6 CPU-s), where each worker rewrote them all (5.5 CPU-s of its 9 s collection).
test:
	@$(MAKE) --no-print-directory -j2 $(VENV)/.test-installed chromium
	$(BIN)/python -m compileall -q dashboard
	$(BIN)/python tests/rewrite_cache.py
	$(BIN)/ruff check dashboard tests benchmarks
	$(BIN)/ruff format --check dashboard tests benchmarks
	$(BIN)/python -m pytest -q -n 3 --dist worksteal

clean:
	rm -rf $(VENV) build dist *.egg-info test-artifacts

# Page load time per sample in headless Chromium (prints figures; `make test` runs only its --quick mode).
bench: $(VENV)/.test-installed chromium
	$(BIN)/python benchmarks/page_load.py
