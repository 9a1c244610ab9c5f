"""Test layout: fast unit tests (kernels, twins, formulas, the MILP on small arrays, catalogs, scenarios) and
integration tests (whole solves, the CLI, reports, plan checks), marked by module so that ``pytest -m unit`` runs
the fast half alone. Random inputs come from ``tests/generators.py``, shared with the benchmarks."""

from __future__ import annotations

import numpy as np
import pytest

INTEGRATION = {"test_solve", "test_cli", "test_html", "test_gtc", "test_check", "test_fuzz", "test_split", "test_speculative", "test_inputs",
               "test_calibration", "test_interface", "test_ledger", "test_simulate", "test_warmup", "test_verify", "test_sim_html"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1]
        item.add_marker(pytest.mark.integration if module in INTEGRATION else pytest.mark.unit)


@pytest.fixture
def rng():
    """A seeded generator for tests that draw their own inputs."""
    return np.random.default_rng(20261201)
