"""The solver table (solvers.backends): one entry per solver word, and a backend this OR-Tools build cannot run
refused by name, with the others named, by each of the three MILPs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from solvers import backends
from solvers import milp as F
from solvers import multiperiod as MP
from solvers import robust as R
from solvers.formulation import padded_replica_bounds
from solvers.vocabulary import NO_PLAN, SOLVERS


def small_problem() -> F.FleetProblem:
    return F.FleetProblem(chips_per_rack=[8], rack_power_w=[10e3], annual_cost_usd_per_rack=[100.0],
                          max_racks=[math.inf], workload=[0], capacity=[100.0], chips=[[2]],
                          integer_replicas=[True], demand=[1050.0])


def small_buildout() -> MP.BuildOutProblem:
    return MP.BuildOutProblem(chips_per_rack=[4], rack_power_w=[10e3], chips=[[4]], coverage=[[1.0]],
                              integer_replicas=[True], demand=[[[2.0]]], probability=[1.0], buy_cost=[[1.0]],
                              available=[[True]], alive=[[True]])


def test_the_registry_covers_the_vocabulary():
    assert tuple(backends.BACKENDS) == SOLVERS
    for name, b in backends.BACKENDS.items():
        assert b.name == name and b.label and b.gap and "TIME" in b.time_limit_names
    assert set(backends.available()) <= set(SOLVERS)
    assert set(backends.available_exact()) <= set(backends.available())
    assert backends.TIME_LIMIT_NAMES == {"TIME", "UNDETERMINED"}  # HiGHS names its time limit UNDETERMINED
    assert [n for n, b in backends.BACKENDS.items() if b.scales_continuous] == ["cp-sat"]
    assert [n for n, b in backends.BACKENDS.items() if not b.takes_hints] == ["cp-sat"]


def test_every_backend_has_a_mathopt_solver_type():
    types = backends.solver_types()
    assert set(types) == set(SOLVERS) and len(set(types.values())) == len(SOLVERS)


def test_the_old_names_stay_importable_from_milp():
    assert F.SolverError is backends.SolverError and F.solve_parameters is backends.solve_parameters
    assert F.solver_output_to_stderr is backends.solver_output_to_stderr and F.solver_key("CPSAT") == "cp-sat"
    assert F.MIN_SOLVE_SECONDS == backends.MIN_SOLVE_SECONDS and F.solver_seconds(-1) == F.MIN_SOLVE_SECONDS


@pytest.mark.parametrize("solver", backends.available())
def test_every_available_backend_solves_a_small_problem(solver):
    sol = F.optimize(small_problem(), solver, time_limit_s=30, relative_gap=1e-9)
    assert sol.status == "optimal" and sol.racks.tolist() == [3] and sol.violations == ()


def test_an_unavailable_backend_is_refused_naming_the_others(monkeypatch):
    monkeypatch.setattr(backends, "available", lambda: ("scip", "cp-sat"))
    monkeypatch.setattr(backends, "runs", lambda name: name in ("scip", "cp-sat"))
    with pytest.raises(backends.SolverError,
                       match=r"'highs' is not in this OR-Tools build; try one of: scip, cp-sat"):
        F.build(small_problem(), "highs")
    with pytest.raises(backends.SolverError, match="try one of: scip, cp-sat"):
        F.optimize(small_problem(), "HiGHS")
    with pytest.raises(backends.SolverError, match="try one of: scip, cp-sat"):
        R.build(R.RobustProblem([small_problem()]), "highs")
    with pytest.raises(backends.SolverError, match="try one of: scip, cp-sat"):
        MP.build(small_buildout(), "highs")
    F.build(small_problem(), "scip")  # the others still build


def test_an_unknown_solver_is_refused_naming_the_vocabulary():
    with pytest.raises(backends.SolverError, match="unknown solver 'gurobi'; available: scip, highs, cp-sat"):
        backends.require("gurobi")


def test_the_build_out_refuses_a_grid_backend():
    with pytest.raises(backends.SolverError,
                       match=r"scip or highs \(CP-SAT rounds its continuous replicas\); choose one of: scip, highs"):
        MP.build(small_buildout(), "cp-sat")


def test_hints_only_for_the_backends_that_take_them():
    built = F.build(small_problem(), "scip")
    hint = backends.hint_from((built.racks, [3]), (built.replicas, [11]), ([None], [1.0]))
    assert list(hint.values()) == [3.0, 11.0]
    assert backends.hint_parameters("scip", hint) is not None
    assert backends.hint_parameters("cp-sat", hint) is None and backends.hint_parameters("highs", {}) is None


def test_cpsat_grid_bounds_and_parameters():
    x_ub, integer = np.array([10.0, 10.0]), np.array([True, False])
    scaling = backends.cpsat_var_scaling(x_ub[~integer])
    assert scaling == backends.CPSAT_MAX_SCALING
    assert padded_replica_bounds(x_ub, integer, "scip", scaling).tolist() == [10.0, 10.0]
    assert padded_replica_bounds(x_ub, integer, "cp-sat", scaling).tolist() == [10.0, 10.0 + 2.0 / scaling]
    built = F.build(small_problem(), "cp-sat")
    assert backends.solve_parameters(built, 1.0, 1e-4).cp_sat.mip_max_bound == backends.CPSAT_MAX_BOUND


@pytest.mark.parametrize("solver", backends.available())
def test_status_of_a_solve(solver):
    raw = F.solve(F.build(small_problem(), solver), 30, 1e-9)
    assert backends.status_of(raw.result) == "optimal"
    infeasible = F.FleetProblem(chips_per_rack=[8], rack_power_w=[10e3], annual_cost_usd_per_rack=[100.0],
                                max_racks=[1], workload=[0], capacity=[100.0], chips=[[2]],
                                integer_replicas=[True], demand=[1050.0])
    status = backends.status_of(F.solve(F.build(infeasible, solver), 30, 1e-9).result)
    assert status in ("infeasible", NO_PLAN)


def test_a_build_probes_only_its_own_backend(monkeypatch):
    """A command pays for probing the backend it uses, not every backend of the build (each probe is a solve)."""
    probed = []
    real = backends.runs
    monkeypatch.setattr(backends, "_RUNS", {})
    monkeypatch.setattr(backends, "runs", lambda name: probed.append(name) or real(name))
    F.build(small_problem(), "highs")
    assert probed == ["highs"]

