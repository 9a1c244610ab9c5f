"""``planner warmup``: compile every jitted kernel once and cache it, so that no user's first solve spends its
time limit compiling (issue 25). ``make demo`` and ``make test`` run it as the last step of installing.

Numba compiles a kernel on its first call and caches the machine code beside the sources (``solvers/jit.py``);
the cache is dropped whenever a source of ``solvers/`` changes. ``kernels_cached`` says whether the cache is
there, so the CLI can run this first, and say so, instead of charging the compilation to a solve.
"""

from __future__ import annotations

import compileall
import time
from importlib import resources
from pathlib import Path

import solvers
from solvers.jit import compile_both_builds

from planner.orchestration import answer
from planner.fleet.solve import solve
from planner.kernel_cache import COLD_ESTIMATE, kernels_cached  # noqa: F401 - re-exported
from planner.perf.estimate import estimate
from planner.perf.frontier import frontier
from planner.scenario import Scenario, load_scenario
from planner.sim import simulate

WARMUP_SCENARIO = "warmup.yaml"


def warmup(progress=None) -> dict:
    """Write the bytecode, then compile and cache the kernels: solve, simulate, estimate and frontier on a small
    scenario that reaches every kind of option, then each parallel driver's other build. Returns the seconds each step took; ``progress(step, seconds)`` after each."""
    steps = {}

    def step(name, fn):
        t0 = time.perf_counter()
        out = fn()
        steps[name] = time.perf_counter() - t0
        if progress:
            progress(name, steps[name])
        return out

    step("bytecode", compile_bytecode)
    path = resources.files("planner") / "data" / WARMUP_SCENARIO
    with resources.as_file(path) as p:
        scenario = load_scenario(p)
    plan = step("solve", lambda: solve(scenario))
    step("simulate", lambda: simulate(plan, duration_s=5.0))
    step("estimate", lambda: estimate("llama-3.1-70b", "vr-nvl72", batch=8, precision="fp8"))
    step("frontier", lambda: frontier("llama-3.1-8b", ["hgx-h100"]))
    step("parallel builds", compile_both_builds)
    return steps


def compile_bytecode() -> bool:
    """Write the packages' bytecode (``__pycache__/*.pyc``). Python compiles a module from source on every import
    where no .pyc is stored, as it is wherever PYTHONDONTWRITEBYTECODE is set, or an editable install was never
    imported by a writer: 0.15 s of CPU in every command here. A folder that cannot be written is left alone (pip
    compiles what it installs). True when every module compiled."""
    roots = [Path(__file__).resolve().parent, Path(solvers.__file__).resolve().parent]
    return all([bool(compileall.compile_dir(str(root), quiet=2)) for root in roots])


def compiled_solve(scenario, solver: str | None = None, time_limit_s: float | None = None, progress=None,
                   verify="quick", seed: int = 0, duration_s: float | None = None, trace=None):
    """``planner.solve``: the plan ``planner solve`` shows (``planner.orchestration.answer``: simulated and, where a
    workload misses a target, repaired; ``verify="off"`` for the MILP's plan alone, ``"thorough"`` for ``solve
    --verify``), with the kernels compiled and cached first where the cache is missing, so that the scenario's time
    limit bounds the search and never the compilation (the CLI does the same, saying so). The scenario is read
    first: a bad one is an InputError at once, not after a minute of compiling."""
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario)
    if not kernels_cached():
        warmup()
    return answer(scenario, verify=verify, seed=seed, duration_s=duration_s, trace=trace, progress=progress,
                  solver=solver, time_limit_s=time_limit_s).plan
