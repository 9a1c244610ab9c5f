"""Reliability round three (issue 28): the library's inputs of the wrong type, full disks and closed pipes, and
the four cases of the last round that still failed. docs/RELIABILITY.md lists each surface, its promise and the
test that holds it."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import planner
from planner.errors import PlannerError
from planner.cli import main
from planner.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
SMALL = """
name: small
start_date: 2027-01-01
horizon_years: 4
finance: {wacc: 0.08, electricity_usd_per_mwh: 70, pue: 1.25}
hardware: {allow: [hgx-h100]}
workloads:
  - {name: chat, model: llama-3.1-8b, requests_per_s: 20, input_tokens: 1000, output_tokens: 300, tier: standard,
     ttft_s: 1.0}
"""


SCENARIO_FILE = str(ROOT / "scenarios" / "bank-2mw.yaml")
PLAN_FILE = str(ROOT / "tests" / "golden" / "plans" / "bank-2mw.json")


# ---- the library's inputs of the wrong type ---------------------------------------------------------------------
@pytest.mark.parametrize("call, field", [
    (lambda: planner.solve(None), "scenario"),
    (lambda: planner.solve(42), "scenario"),
    (lambda: planner.load_scenario(None), "scenario"),
    (lambda: planner.estimate(None, "hgx-h100"), "model"),
    (lambda: planner.estimate("llama-3.1-8b", None), "hardware"),
])
def test_library_calls_with_the_wrong_type_raise_input_error(call, field):
    """issue 28: planner.solve(None) and friends raised TypeError, not the documented InputError."""
    with pytest.raises(InputError, match="expected") as err:
        call()
    assert err.value.field == field


@pytest.mark.parametrize("call, field", [
    (lambda: planner.answer(SCENARIO_FILE, trace=5), "trace"),
    (lambda: planner.answer(SCENARIO_FILE, robust="p90", samples=5), "--samples"),
    (lambda: planner.simulate(PLAN_FILE, trace=5), "trace"),
    (lambda: planner.simulate(PLAN_FILE, trace=object()), "trace"),
])
def test_the_newer_library_calls_with_the_wrong_type_raise_input_error(call, field):
    """issue 43: a trace of the wrong type was an AttributeError from inside the trace fit, and a robust solve's
    samples of the wrong type a TypeError from inside the sweep; both are refused before any solve."""
    with pytest.raises(InputError, match="expected") as err:
        call()
    assert err.value.field == field


def test_every_library_call_is_the_function_the_interface_names_whatever_was_imported_first():
    """issue 43: ``planner.answer`` was the module planner/answer.py once anything had imported it (``planner.solve``
    does), so ``planner.answer(...)`` raised "TypeError: 'module' object is not callable"; the module is now
    planner/orchestration.py, and no export shares a submodule's name."""
    import importlib
    import pkgutil

    for info in pkgutil.walk_packages(planner.__path__, "planner."):
        if info.name not in ("planner.launcher", "planner.__main__"):
            importlib.import_module(info.name)
    for name, (module, attr) in planner._EXPORTS.items():
        assert getattr(planner, name) is getattr(importlib.import_module(module), attr), name
        assert not (Path(planner.__file__).parent / f"{name}.py").exists(), name


@pytest.mark.parametrize("call, field", [
    (lambda: planner.frontier(None), "model"),
    (lambda: planner.frontier(42), "model"),
    (lambda: planner.frontier("llama-3.1-8b", hardware=42), "hardware"),
    (lambda: planner.frontier("llama-3.1-8b", hardware=[None]), "hardware"),
    (lambda: planner.frontier("llama-3.1-8b", precision=5), "precision"),
    (lambda: planner.frontier("llama-3.1-8b", speculative="draft_model", draft_model=5), "draft_model"),
    (lambda: planner.estimate("llama-3.1-8b", "hgx-h100", precision=8), "precision"),
    (lambda: planner.estimate("llama-3.1-8b", "hgx-h100", speculative="draft_model", draft_model=5), "draft_model"),
])
def test_frontier_and_estimate_with_the_wrong_type_raise_input_error_naming_the_argument(call, field):
    """planner.frontier(None) was a TypeError from deep inside ('NoneType' object is not iterable); a precision of
    the wrong type an empty frontier; a drafter's id of the wrong type a TypeError."""
    with pytest.raises(InputError, match="expected") as err:
        call()
    assert err.value.field == field


@pytest.mark.parametrize("setting", [42, [1, 2], None, 3.5])
def test_scenario_with_of_the_wrong_type_raises_input_error(setting):
    from planner.scenario import scenario_from_yaml

    sc = scenario_from_yaml(SMALL)
    with pytest.raises(InputError, match="expected 'PATH=VALUE' strings or a mapping") as err:
        sc.with_(setting)
    assert err.value.field == "with_"
    assert sc.with_({"site.power_budget_mw": 5}).site.power_budget_mw == 5  # the right types still work


# ---- full disks and closed pipes ------------------------------------------------------------------------------------
RESULT = ROOT / "tests" / "data" / "results" / "vllm-serve-2026.json"
IMPORT = ["measurements", "import", str(RESULT), "--from", "vllm", "-H", "hgx-h100", "-m", "llama-3.1-8b",
          "--precision", "fp8", "--chips", "1"]


def _one_error_line(stderr: str, *words: str) -> None:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert "Traceback" not in stderr and all(w in lines[0] for w in words), stderr


@pytest.fixture
def full_disk(monkeypatch):
    """Every file atomic_write opens fails its write with ENOSPC, as on a full filesystem."""
    import planner.report.files as files

    real = os.fdopen

    class Full:
        def __init__(self, fh):
            self.fh = fh

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def write(self, data):
            self.fh.write(data[: len(data) // 2])  # part of it lands, then the disk is full
            self.fh.flush()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(files.os, "fdopen", lambda fd, mode: Full(real(fd, mode)))


def test_out_on_a_full_disk_is_one_line_and_no_partial_file(tmp_path, full_disk):
    """issue 28: `--out` on a full filesystem was a traceback; now one error line naming the file, exit 1, and the
    file as it was (absent here, the previous one kept below), no temporary left beside it."""
    out = tmp_path / "rows.csv"
    res = CliRunner().invoke(main, [*IMPORT, "--out", str(out)])
    assert res.exit_code == 1, res.output
    _one_error_line(res.stderr, str(out), "disk full")
    assert os.listdir(tmp_path) == []
    out.write_text("previous rows\n")
    res = CliRunner().invoke(main, [*IMPORT, "--out", str(out)])
    assert res.exit_code == 1 and out.read_text() == "previous rows\n" and os.listdir(tmp_path) == ["rows.csv"]


def test_json_to_dev_full_is_one_line_exit_1():
    """issue 28: `--format json > /dev/full` was a traceback (or an error at the interpreter's exit)."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    with open("/dev/full", "w") as full:
        res = subprocess.run([sys.executable, "-m", "planner.cli", *IMPORT, "--format", "json"], stdout=full,
                             stderr=subprocess.PIPE, text=True, cwd=ROOT)
    assert res.returncode == 1, res.stderr
    _one_error_line(res.stderr, "standard output", "disk full")


def test_a_closed_pipe_is_one_line_exit_1():
    read, write = os.pipe()
    os.close(read)  # the reader went away before the first byte (as `| head -c0` would)
    try:
        res = subprocess.run([sys.executable, "-m", "planner.cli", "catalog", "--format", "json"], stdout=write,
                             stderr=subprocess.PIPE, text=True, cwd=ROOT)
    finally:
        os.close(write)
    assert res.returncode == 1, res.stderr
    _one_error_line(res.stderr, "standard output", "Broken pipe")


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs setrlimit in the child")
def test_a_file_over_the_size_limit_is_one_line_and_no_partial_file(tmp_path):
    """EFBIG: a file that may not grow past RLIMIT_FSIZE (Python ignores SIGXFSZ, so the write fails)."""
    import resource

    out = tmp_path / "rows.json"

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (200, 200))

    res = subprocess.run([sys.executable, "-m", "planner.cli", *IMPORT, "--out", str(out)], capture_output=True,
                         text=True, cwd=ROOT, preexec_fn=small_files)
    assert res.returncode == 1, res.stderr
    _one_error_line(res.stderr, str(out), "file too large")
    assert os.listdir(tmp_path) == []


# ---- the four cases of the last round ------------------------------------------------------------------------------
def _solve(settings=None):
    from planner.fleet.solve import solve
    from planner.scenario import scenario_from_yaml

    sc = scenario_from_yaml(SMALL)
    return solve(sc.with_(settings) if settings else sc)


def _custom(hw_id: str, base: str = "hgx-h100", **rack):
    from planner import catalog

    h = catalog.get_hardware(base).model_dump(mode="json", exclude_none=True)
    h["id"] = hw_id
    h["rack"] = {**h["rack"], **{k: {**h["rack"][k], "value": v} for k, v in rack.items()}}
    return {"hardware.custom": [h], "hardware.allow": [hw_id]}


@pytest.mark.integration
def test_a_max_revenue_plan_selling_nothing_is_json_without_nan():
    """was `ValueError: Out of range float values are not JSON compliant: nan` (exit 1)."""
    from planner.report.files import plan_json

    plan = _solve({"objective": "max_revenue", "prices_usd_per_mtok": {"standard": 0.0}})
    assert plan.totals["racks"] == 0
    text = plan_json(plan)

    def no_constant(name):
        raise AssertionError(f"{name} in the plan's JSON")

    json.loads(text, parse_constant=no_constant)


@pytest.mark.integration
def test_a_free_custom_rack_with_free_electricity_is_an_input_error():
    """was `invalid FleetProblem: annual_cost_usd_per_rack[...] = 0.0` (exit 1): now exit 2 naming the rack."""
    with pytest.raises(InputError, match="free-h100 would cost nothing a year") as err:
        _solve({**_custom("free-h100", capex_usd=0), "finance.electricity_usd_per_mwh": 0})
    assert err.value.field == "hardware"
    plan = _solve(_custom("free-h100", capex_usd=0))  # a free rack whose electricity is billed is planned
    assert all(c["ok"] for c in plan.checks)


@pytest.mark.integration
@pytest.mark.parametrize("base, solver", [("hgx-h100", "scip"), ("hgx-h100", "highs"), ("hgx-h100", "cp-sat"),
                                          ("gb200-nvl72", "scip"), ("gb200-nvl72", "highs")])
def test_ten_million_chips_per_rack_passes_its_own_check(base, solver):
    """was `error: bug: the plan fails its own check` (round two); issue 43 named it again: on every solver and on
    a rack with NVLink domains (wide stages' core chips, row (2c)) it holds."""
    plan = _solve({**_custom("big", base=base, chips=10 ** 7), "solver.name": solver})
    assert plan.status == "optimal" and all(c["ok"] for c in plan.checks)


def test_a_rate_of_1e_15_is_an_input_error_not_a_solver_failure():
    """was `solver 'highs' failed ... ('StatusNotOk' ...)`: the rate floor (1e-6 a second) refuses it first."""
    from planner.scenario import scenario_from_yaml

    with pytest.raises(InputError, match="requests_per_s") as err:
        scenario_from_yaml(SMALL).with_({"workloads.chat.requests_per_s": 1e-15})
    assert "1e-06" in str(err.value)


# ---- sizes refused before any work ----------------------------------------------------------------------------------
def test_robust_with_too_many_samples_is_refused_before_any_variant_is_solved(tmp_path):
    """issue 28: `--robust` with 401 samples was refused only after all 401 variants were solved, naming the
    scenario; now before any (a unit test: conftest refuses a whole solve here), naming the samples file."""
    (tmp_path / "small.yaml").write_text(SMALL)
    samples = tmp_path / "many.yaml"
    samples.write_text("base: small.yaml\naxes:\n  - {path: finance.electricity_usd_per_mwh, range: [50, 140]}\n"
                       "samples: {method: lhs, n: 401, seed: 7}\n")
    res = CliRunner().invoke(main, ["solve", str(tmp_path / "small.yaml"), "--robust", "mean", "--samples",
                                    str(samples), "-q"])
    assert res.exit_code == 2, res.output
    _one_error_line(res.stderr, str(samples), "samples.n", "401 samples", "at most 400")


# ---- time limits honoured to the end (issue 28 item 6) -------------------------------------------------------------
def _capture_solve_parameters(monkeypatch):
    """mathopt.solve replaced by one that records the parameters it was handed and raises (nothing is solved)."""
    from ortools.math_opt.python import mathopt

    seen = []

    class Stop(Exception):
        pass

    def fake_solve(model, solver_type, params=None, model_params=None, **_):
        seen.append(params)
        raise Stop

    monkeypatch.setattr(mathopt, "solve", fake_solve)
    return seen


@pytest.mark.parametrize("limit", [-0.06, 0.0, -1e9, float("nan"), float("-inf")])
def test_no_solver_is_handed_a_zero_or_negative_limit(monkeypatch, limit):
    """A deadline that passed while the options were scored, or a tie-break after a first solve that spent the
    whole limit, used to hand MathOpt a negative limit (SolverError on a busy machine): every entry point now hands
    the least limit, MIN_SOLVE_SECONDS."""
    sys.path.insert(0, str(ROOT / "tests"))
    from generators import random_problem

    from solvers import milp, robust
    from solvers.milp import MIN_SOLVE_SECONDS, SolverError, solve_parameters, solver_seconds

    assert solver_seconds(limit) == MIN_SOLVE_SECONDS
    assert solver_seconds(float("inf")) == milp.MAX_SOLVE_SECONDS and solver_seconds(7.5) == 7.5
    built = milp.build(random_problem(1, 3, 2), "scip")
    assert solve_parameters(built, limit, 1e-4).time_limit.total_seconds() == MIN_SOLVE_SECONDS
    seen = _capture_solve_parameters(monkeypatch)
    with pytest.raises(SolverError):
        milp.solve(built, limit)
    with pytest.raises(SolverError):
        robust.solve(built, limit)
    assert [p.time_limit.total_seconds() for p in seen] == [MIN_SOLVE_SECONDS] * 2


def test_a_build_out_solve_is_never_handed_a_zero_or_negative_limit(monkeypatch):
    from solvers import multiperiod
    from solvers.milp import MIN_SOLVE_SECONDS, SolverError

    seen = _capture_solve_parameters(monkeypatch)
    built = type("B", (), {"model": None, "solver": "scip"})()
    for limit in (-0.06, 0.0):
        with pytest.raises(SolverError):
            multiperiod.solve(built, limit)
    assert [p.time_limit.total_seconds() for p in seen] == [MIN_SOLVE_SECONDS] * 2


def _repair_without_solving(monkeypatch, caps):
    """repair_pools on stand-ins: a plan exists (status optimal) whose pools are smaller than assumed (``caps``)."""
    import dataclasses

    import planner.fleet.solve as solve_module

    @dataclasses.dataclass
    class Sol:
        status: str
        racks: tuple = ()
        replicas: tuple = ()
        violations: tuple = ()
        cautious: bool = False  # as FleetSolution: an option at its loop's last resort

    problem = type("P", (), {"n_columns": 1})()
    built = type("Built", (), {"problem": problem})()
    monkeypatch.setattr(solve_module, "plan_replicas", lambda b, s: None)
    monkeypatch.setattr(solve_module, "allocation_rows", lambda b, r: [])
    monkeypatch.setattr(solve_module, "assumed_servers_above_pools", lambda b, rows: caps)
    monkeypatch.setattr(solve_module, "same_problem", lambda a, b: False)  # the columns sized again moved the MILP
    # the real optimize_by (conftest wraps it to catch unit tests that solve): optimize itself is faked below
    monkeypatch.setattr(solve_module, "optimize_by", getattr(solve_module.optimize_by, "__wrapped__",
                                                             solve_module.optimize_by))
    settings = type("S", (), {"name": "scip", "time_limit_s": 5.0, "relative_gap": 1e-3,
                              "fewest_platforms": False})()
    return solve_module, built, Sol("optimal"), settings, Sol


def test_repair_past_the_deadline_returns_the_plan_so_far(monkeypatch):
    """The deadline passed after the first plan: the pools' repair returns that plan, status time_limit, instead of
    raising 'the time limit ran out'."""
    import time

    solve_module, built, sol, settings, _ = _repair_without_solving(monkeypatch, {0: 1.0})
    monkeypatch.setattr(solve_module, "with_options_at", lambda *a: pytest.fail("no time: nothing re-generated"))
    monkeypatch.setattr(solve_module, "optimize", lambda *a, **k: pytest.fail("no time: nothing solved"))
    got_built, got = solve_module.repair_pools(built, sol, settings, time.monotonic() - 1.0)
    assert got_built is built and got.status == "time_limit"


def test_a_repair_round_without_a_plan_in_the_time_left_keeps_the_plan_so_far(monkeypatch):
    import time

    from solvers.vocabulary import NO_PLAN

    solve_module, built, sol, settings, Sol = _repair_without_solving(monkeypatch, {0: 1.0})
    again = type("Built", (), {"problem": built.problem})()
    monkeypatch.setattr(solve_module, "with_options_at", lambda b, caps: (again, np.ones(b.problem.n_columns, bool)))
    monkeypatch.setattr(solve_module, "optimize", lambda *a, **k: Sol(NO_PLAN))
    got_built, got = solve_module.repair_pools(built, sol, settings, time.monotonic() + 60.0)
    assert got_built is built and got.status == "time_limit"


def test_a_dropped_column_leaves_the_next_solve_a_start_without_it(monkeypatch):
    """A round whose options sized again drop a column (it no longer meets its targets) solved again from nothing:
    a cold start that took SCIP 105 s on the shipped build-out, where a start from a nearby plan closed in 7 s. Its
    start now carries every other column's replicas (``carried_replicas``), in a plan of one period as in a
    build-out's, whose columns may be a subset of the options."""
    import dataclasses
    import time

    solve_module, built, _, settings, Sol = _repair_without_solving(monkeypatch, {0: 1.0})
    built.problem.n_columns, built.options = 3, {"servers": np.full(3, 2.0)}
    again = type("Built", (), {"problem": type("P", (), {"n_columns": 2})(), "options": {"servers": np.full(2, 2.0)}})()
    monkeypatch.setattr(solve_module, "with_options_at", lambda b, caps: (again, np.array([True, False, True])))
    starts = []
    monkeypatch.setattr(solve_module, "optimize", lambda *a, **k: starts.append(k.get("start")) or Sol("optimal"))
    solve_module.repair_pools(built, dataclasses.replace(Sol("optimal"), racks=(1.0,), replicas=(2.0, 5.0, 7.0)),
                              settings, time.monotonic() + 60.0)
    racks, replicas = starts[0]
    assert racks == (1.0,) and list(replicas) == [2.0, 7.0]
    # by hand: a build-out's problem on options [0, 2, 3] of four, option 1 dropped (options 0, 2, 3 become 0, 1,
    # 2), the new problem on options [1, 2] (the old 2 and 3) and then on all three
    carried = solve_module.carried_replicas
    kept, periods = np.array([True, False, True, True]), np.array([[[5.0, 6.0, 7.0]]])
    assert carried(periods, kept, 3, 2, [0, 2, 3], [1, 2]).tolist() == [[[6.0, 7.0]]]
    assert carried(periods, kept, 3, 3, [0, 2, 3], [0, 1, 2]).tolist() == [[[5.0, 6.0, 7.0]]]
    assert carried(np.array([6.0, 7.0]), kept, 2, 3, [2, 3], None).tolist() == [0.0, 6.0, 7.0]  # a new column: 0
    assert carried(periods, kept, 3, 2, [0, 2], [1, 2]) is None  # columns that do not match the options: no start


@pytest.mark.parametrize("status", ["optimal", "time_limit"])
def test_a_repair_round_that_leaves_the_milp_unchanged(monkeypatch, status):
    """Options sized again whose figures the MILP reads did not move (a pool's TTFT and servers did): a plan the
    solver proved within its gap stands, with no re-solve; a plan stopped by the time limit is solved again."""
    import dataclasses
    import time

    sys.path.insert(0, str(ROOT / "tests"))
    from generators import random_problem

    from solvers.milp import same_problem

    solve_module, _, _, settings, Sol = _repair_without_solving(monkeypatch, {0: 1.0})
    problem = random_problem(1, 3, 2)
    assert same_problem(problem, dataclasses.replace(problem))
    assert not same_problem(problem, dataclasses.replace(problem, demand=problem.demand * 2))
    options = {"servers": problem.capacity * 0 + 2.0}  # the last round sizes every pooled option for one server
    built = type("Built", (), {"problem": problem, "options": options})()
    again = type("Built", (), {"problem": dataclasses.replace(problem), "options": options})()
    monkeypatch.setattr(solve_module, "with_options_at", lambda b, caps: (again, np.ones(b.problem.n_columns, bool)))
    monkeypatch.setattr(solve_module, "same_problem", same_problem)
    solved = []
    monkeypatch.setattr(solve_module, "optimize", lambda *a, **k: solved.append(k.get("start")) or Sol("optimal"))
    sol = Sol(status)
    got_built, got = solve_module.repair_pools(built, sol, settings, time.monotonic() + 60.0)
    assert got_built is again
    assert (got is sol and not solved) if status == "optimal" else (got is not sol and solved)


def test_no_time_before_the_first_milp_is_an_error_naming_what_used_it():
    import time

    import planner.fleet.solve as solve_module
    from planner.errors import PlannerError

    settings = type("S", (), {"time_limit_s": 5.0})()
    with pytest.raises(PlannerError, match="time limit of 5 s ran out while scoring candidates"):
        solve_module.optimize_by.__wrapped__(None, settings, time.monotonic() - 1.0, "scoring candidates")


@pytest.mark.integration
def test_a_deadline_passing_after_the_first_plan_ends_in_that_plan_only_where_it_holds(monkeypatch):
    """End to end on mixed-site (whose pools are repaired): the clock jumps past the deadline as the first MILP
    returns. The first plan's prefill pools are smaller than the pools its options were sized for, and at the
    pools it deploys it misses its TTFT targets: the answer is an error naming the time limit, not that plan (once
    "bug: the plan fails its own check"), and never a plan that fails its check (INTERFACE.md 1.6)."""
    import time
    import types

    import planner.fleet.solve as solve_module
    from planner.fleet.problem import build_problem
    from planner.scenario import load_scenario

    sc = load_scenario(ROOT / "scenarios" / "mixed-site.yaml")
    built = build_problem(sc)
    shift = [0.0]
    monkeypatch.setattr(solve_module, "time", types.SimpleNamespace(
        monotonic=lambda: time.monotonic() + shift[0], perf_counter=time.perf_counter))
    real = solve_module.optimize

    def first_then_late(*args, **kwargs):
        sol = real(*args, **kwargs)
        shift[0] = 1e6  # the deadline has passed
        return sol

    monkeypatch.setattr(solve_module, "optimize", first_then_late)
    try:
        plan = solve_module.solve(sc, options_from=built)
    except PlannerError as exc:
        assert "time limit" in str(exc) and "does not hold" in str(exc) and "bug" not in str(exc)
    else:
        assert plan.status == "time_limit" and all(c["ok"] for c in plan.checks)
        assert plan.to_dict()["status"] == "time_limit"
