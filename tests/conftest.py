"""Test layout: fast unit tests (kernels, twins, formulas, the MILP on small arrays, catalogs, scenarios) and
integration tests (whole solves, simulations of solved plans, the CLI, reports, plan checks). A module in
INTEGRATION is integration throughout; elsewhere a test is unit unless it carries ``@pytest.mark.integration``
(or its module's ``pytestmark`` does). The markers are held true: a unit test that starts a whole solve (single
period or build-out) fails, naming itself, so ``make test-fast`` (``-m unit``) stays fast. Random inputs come from
``tests/generators.py``, shared with the benchmarks."""

from __future__ import annotations

import functools
import os
import shutil
import tempfile

if os.environ.get("PYTEST_XDIST_WORKER"):  # one thread per worker: the workers already fill the cores, and numba's
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")  # OpenMP threads spin where they outnumber them
    os.environ.setdefault("OMP_NUM_THREADS", "1")

# Commands the tests start run in their own processes, whatever `planner serve` a developer keeps running;
# tests/test_server.py starts servers of its own and lifts this for them.
os.environ["PLANNER_NO_SERVER"] = "1"

import numpy as np
import pytest

import planner.fleet.buildout as buildout_module
import planner.fleet.solve as solve_module
from tests import shipped

INTEGRATION = {"test_solve", "test_cli", "test_html", "test_gtc", "test_check", "test_fuzz", "test_split", "test_speculative", "test_inputs",
               "test_calibration", "test_interface", "test_ledger", "test_simulate", "test_warmup", "test_verify", "test_sim_html",
               "test_sim_buildout", "test_api", "test_cost_split", "test_headroom", "test_installed", "test_rentals",
               "test_sweep", "test_server"}

WAIT_FOR_ENGINES = {"test_engines_accept"}  # modules whose tests wait for .engines (tests/engines/install.py)

_running: dict = {"unit": None}  # the unit test being set up or run, if any


def pytest_collection_modifyitems(config, items):
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1]
        if module in INTEGRATION and item.get_closest_marker("integration") is None:
            item.add_marker(pytest.mark.integration)
        if item.get_closest_marker("integration") is None:
            item.add_marker(pytest.mark.unit)
        elif item.get_closest_marker("unit") is not None:
            raise pytest.UsageError(f"{item.nodeid} is marked both unit and integration")
    # the tests that wait for the serving engines' install (CI installs them beside the suite: .ci/run) go last, so
    # that no pytest-xdist worker sits idle waiting for it while files that need nothing are left to run
    items.sort(key=lambda item: item.module.__name__.rsplit(".", 1)[-1] in WAIT_FOR_ENGINES)


def _refusing(fn):
    @functools.wraps(fn)
    def guarded(*args, **kwargs):
        item = _running["unit"]
        if item is not None:
            raise AssertionError(f"{item.nodeid} is marked unit but starts a whole solve: mark it "
                                 "@pytest.mark.integration (tests/conftest.py)")
        return fn(*args, **kwargs)
    return guarded


def pytest_configure(config):
    # the folder a run's test processes share (tests/shipped.py), made by the first process, whose environment the
    # pytest-xdist workers inherit; removed when that process ends
    if not os.environ.get(shipped.SHARED):
        folder = tempfile.mkdtemp(prefix="planner-tests-")
        os.environ[shipped.SHARED] = folder
        config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
    # the entry points of a whole solve, looked up at call time by solve() and solve_buildout()
    solve_module.optimize_by = _refusing(solve_module.optimize_by)
    buildout_module.build_buildout = _refusing(buildout_module.build_buildout)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):  # module fixtures are set up here, under the first test that needs them
    _running["unit"] = item if item.get_closest_marker("unit") else None
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    _running["unit"] = item if item.get_closest_marker("unit") else None
    yield
    _running["unit"] = None


@pytest.fixture
def rng():
    """A seeded generator for tests that draw their own inputs."""
    return np.random.default_rng(20261201)
