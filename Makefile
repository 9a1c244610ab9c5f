# Two entry points that work on a fresh machine: `make demo` and `make test`. Each creates .venv on first use.
VENV ?= .venv
PY := $(VENV)/bin/python
PYTHON ?= python3

.PHONY: demo test test-fast test-unit test-slow test-export engines bench clean docs docs-check

$(VENV)/.deps: pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test]'
	touch $@

$(VENV)/.installed: $(VENV)/.deps
	$(VENV)/bin/planner warmup  # compile and cache the kernels once, so no solve's time limit pays for it
	touch $@

demo: $(VENV)/.installed
	$(VENV)/bin/planner solve scenarios/sovereign-100mw.yaml

# the suite on two processes (pytest-xdist), each test file on one of them so that its solved plans are made once
XDIST := -n 2 --dist loadfile

test: $(VENV)/.installed
	$(PY) -m pytest -q $(XDIST)

# the unit half (no whole solve: tests/conftest.py holds the markers to it), to run on every change
test-fast: $(VENV)/.installed
	$(PY) -m pytest -q $(XDIST) -m 'unit and not slow'

test-unit: test-fast

test-slow: $(VENV)/.installed
	$(PY) -m pytest -q -m slow

# the engines whose own parsers judge every exported file (tests/engines/install.py: .engines/ENGINE-VERSION, the
# versions planner/export names; several GB, kept once made); make test runs their checks where they are installed
engines: $(VENV)/.deps  # the export's versions, not the compiled kernels: CI installs them while those compile
	$(PY) tests/engines/install.py

test-export: engines
	$(PY) -m pytest -q $(XDIST) tests/test_engines_accept.py tests/test_export.py tests/test_export_safety.py

# the figures the docs quote and the README's screenshot, rewritten from what the code prints (docs/generate.py);
# docs-check only compares (make test runs the same check: tests/test_docs.py)
docs: $(VENV)/.installed
	$(PY) docs/generate.py

docs-check: $(VENV)/.installed
	$(PY) docs/generate.py --check

bench: $(VENV)/.installed
	$(PY) benchmarks/bench_engine.py
	$(PY) benchmarks/bench_milp.py
	$(PY) benchmarks/bench_perf_model.py

clean:
	rm -rf $(VENV) .pytest_cache .engines
