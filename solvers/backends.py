"""The solvers the MILPs run on, as data, and the machinery every solve shares (docs/OPTIMIZER.md 4).

:data:`BACKENDS` has one :class:`Backend` per name in ``solvers.vocabulary.SOLVERS``: the MathOpt solver type and
each solver's quirks (whether it takes a hint, whether its continuous variables need CP-SAT's grid, how it names a
stopped time limit, what its gap means). The single-period MILP (``solvers.milp``), the robust fleet
(``solvers.robust``) and the build-out (``solvers.multiperiod``) all solve through :func:`run`: the parameters
(:func:`solve_parameters`, never a zero or negative limit: :func:`solver_seconds`), the hint (:func:`hint_parameters`),
stdout kept for the command's JSON (:func:`solver_output_to_stderr`), Ctrl-C that stops at once (:func:`interruptible`)
and one :class:`SolverError` naming the alternatives. :func:`status_of` is the one map from MathOpt's termination to
a plan's status. :func:`available` says which backends this OR-Tools build can run (probed once).

A new backend (Gurobi through MathOpt, say) is one entry in :data:`BACKENDS` and its word in ``SOLVERS``; the
solver-agreement tests run over :func:`available`.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

import numpy as np

from solvers.vocabulary import NO_PLAN, SOLVERS


class Built(Protocol):
    """What a solve reads of a built model (:func:`solve_parameters`, :func:`run`): the MathOpt model and the
    solver's name (the fleet's, the robust fleet's and the build-out's models all have them)."""

    model: Any  # mathopt.Model: OR-Tools ships no types for MathOpt
    solver: str


class SolverError(RuntimeError):
    """A solver is unknown, missing from this OR-Tools build, or failed; the message names the alternatives."""


@dataclass(frozen=True)
class Backend:
    """One solver as the MILPs see it."""

    name: str  # the word in solvers.vocabulary.SOLVERS
    label: str  # as messages write it
    solver_type: str  # the mathopt.SolverType member that runs it
    takes_hints: bool  # handed a known plan as a starting point (CP-SAT was slower with one, so it gets none)
    scales_continuous: bool  # solves continuous variables on a grid (CP-SAT's mip_var_scaling, see
    # cpsat_var_scaling): continuous replicas need the scaling and 2 grid steps of room on their bounds, and a
    # model whose continuous values must be exact (the build-out) refuses it
    time_limit_names: tuple[str, ...]  # MathOpt limit names that mean "stopped by the time limit" (HiGHS: UNDETERMINED)
    gap: str  # what its gap means, and why the absolute gap is always handed as 0 (or as the caller gives it)
    proof_emphasis: str = ""  # its emphasis setting (a GScipParameters.Emphasis name) for a first solve, one with no
    # known plan to start from, where proving the gap is the work (solve_parameters' from_scratch)
    proof_int_params: tuple = ()  # (name, value) of its integer parameters for such a solve, after the emphasis

    @property
    def exact_continuous(self) -> bool:
        """Whether continuous variables come back as the LP would have them (not rounded to a grid)."""
        return not self.scales_continuous


BACKENDS: dict[str, Backend] = {
    "scip": Backend("scip", "SCIP", "GSCIP", takes_hints=True, scales_continuous=False, time_limit_names=("TIME",),
                    gap="relative gap |primal - dual| / min(|primal|, |dual|); absolute gap 0 unless given",
                    proof_emphasis="OPTIMALITY",
                    proof_int_params=(("presolving/maxrestarts", 0), ("separating/maxrounds", 0))),
    "highs": Backend("highs", "HiGHS", "HIGHS", takes_hints=True, scales_continuous=False,
                     time_limit_names=("TIME", "UNDETERMINED"),
                     gap="relative gap |primal - dual| / |primal|; its own absolute gap of 1e-6 would hide the "
                         "tie-break terms, so 0 unless given"),
    "cp-sat": Backend("cp-sat", "CP-SAT", "CP_SAT", takes_hints=False, scales_continuous=True,
                      time_limit_names=("TIME",),
                      gap="relative gap |primal - dual| / max(1, |primal|) on its scaled integer model; absolute gap 0 "
                          "unless given"),
}
# A plan stopped by a limit is time_limit when any backend names that limit so (status_of reads the result alone).
TIME_LIMIT_NAMES: frozenset[str] = frozenset(n for b in BACKENDS.values() for n in b.time_limit_names)

# CP-SAT solves continuous variables as integers after multiplying them by mip_var_scaling; its default 1.0 turns
# continuous replicas into integer ones (a worse plan reported as optimal). We scale so the largest replica bound
# maps to CPSAT_MAX_BOUND, at most CPSAT_MAX_SCALING per replica.
CPSAT_MAX_BOUND = 1e7
CPSAT_MAX_SCALING = 1e5
# The least time limit a solver is handed (issue 28): a deadline that passed while the options were scored, or a
# tie-break after a first solve that spent the whole limit, leaves nothing or a negative remainder, and MathOpt
# refuses a negative limit and the solvers treat a zero one unevenly. A solve past its deadline gets this much
# more: enough for the solver to start, take its hint and stop with the best plan it has (or the reason there is
# none). MAX_SOLVE_SECONDS: above the longest limit a scenario may set (1e6 s), finite for timedelta.
MIN_SOLVE_SECONDS = 0.05
MAX_SOLVE_SECONDS = 1e7


def solver_key(name: str) -> str:
    """Canonical solver name ('scip', 'highs', 'cp-sat'); accepts any case and cp_sat / cpsat."""
    key = str(name).strip().lower().replace("_", "-")
    key = "cp-sat" if key == "cpsat" else key
    if key not in BACKENDS:
        raise SolverError(f"unknown solver {name!r}; available: {', '.join(SOLVERS)}")
    return key


def backend(name: str) -> Backend:
    """The :class:`Backend` of a solver name (any spelling :func:`solver_key` accepts)."""
    return BACKENDS[solver_key(name)]


def solver_types() -> dict:
    """Solver name -> mathopt.SolverType, for every backend."""
    from ortools.math_opt.python import mathopt

    return {name: getattr(mathopt.SolverType, b.solver_type) for name, b in BACKENDS.items()}


_AVAILABLE: list = []  # available()'s answer, kept once a probe has found any backend
_RUNS: dict = {}  # runs()'s answers that were yes, per backend


def available() -> tuple[str, ...]:
    """The backends this OR-Tools build can run, in SOLVERS' order: each solves a one-variable model (probed once
    per process, then cached; a probe that finds none, as under a test's stand-in solver, is not kept)."""
    if _AVAILABLE:
        return tuple(_AVAILABLE)
    found = [name for name in solver_types() if runs(name)]
    _AVAILABLE[:] = found
    return tuple(found)


def runs(name: str) -> bool:
    """Whether this OR-Tools build runs backend ``name``: it solves a one-variable model (once per process and
    backend; a solve costs a few milliseconds, so a command probes only the backend it uses)."""
    if name in _RUNS:
        return _RUNS[name]
    from ortools.math_opt.python import mathopt

    solver_type = solver_types().get(name)
    if solver_type is None:
        return False
    m = mathopt.Model(name="probe")
    x = m.add_integer_variable(lb=0.0, ub=1.0, name="x")
    m.minimize(x)
    try:
        with solver_output_to_stderr():
            result = mathopt.solve(m, solver_type)
    except Exception:  # noqa: BLE001 - a solver missing from the build raises a plain RuntimeError/ValueError
        return False
    ok = result.termination.reason == mathopt.TerminationReason.OPTIMAL
    if ok:  # a probe that fails is not kept: a test's stand-in solver must not poison the process
        _RUNS[name] = True
    return ok


def available_exact() -> tuple[str, ...]:
    """The available backends whose continuous variables come back exact, as the model gives them (not on
    CP-SAT's grid): the build-out's, and those that see (O)'s 1e-7 tie terms and the tight gaps the tests ask."""
    return tuple(name for name in available() if BACKENDS[name].exact_continuous)


def require(name: str) -> str:
    """:func:`solver_key` of ``name``, refused with SolverError (naming the backends there are) where this OR-Tools
    build cannot run it."""
    key = solver_key(name)
    if not runs(key):
        there = available()
        raise SolverError(f"solver {key!r} is not in this OR-Tools build; try one of: "
                          f"{', '.join(there) or '(none found)'}")
    return key


def others(name: str) -> str:
    """The other backends, for an error's 'try one of'."""
    return ", ".join(s for s in SOLVERS if s != name)


def cpsat_var_scaling(continuous_upper_bounds: np.ndarray) -> float:
    """CP-SAT's mip_var_scaling: continuous replicas are solved on a grid of 1/this replicas. As fine as
    CPSAT_MAX_SCALING allows while the largest bound still maps inside CPSAT_MAX_BOUND (with room for the margin)."""
    largest = float(np.max(continuous_upper_bounds, initial=0.0)) + 1.0
    return float(min(CPSAT_MAX_SCALING, 0.5 * CPSAT_MAX_BOUND / largest))


def solver_seconds(time_limit_s) -> float:
    """The limit a solver is handed for ``time_limit_s``: at least MIN_SOLVE_SECONDS (never zero, negative or
    NaN), at most MAX_SOLVE_SECONDS."""
    try:
        seconds = float(time_limit_s)
    except (TypeError, ValueError):
        seconds = math.nan
    if not seconds >= MIN_SOLVE_SECONDS:  # NaN too
        return MIN_SOLVE_SECONDS
    return min(seconds, MAX_SOLVE_SECONDS)


def solve_parameters(built: Built, time_limit_s: float, relative_gap: float, absolute_gap: float = 0.0,
                     from_scratch: bool = False):
    """MathOpt parameters for ``built`` (a model with ``solver`` and, for a grid backend, ``cpsat_var_scaling``):
    the time limit and relative gap (the absolute gap is 0 unless given, so only the relative one stops the search:
    HiGHS's default 1e-6 absolute gap would otherwise hide the tie-break terms; (T)'s integer objective gives 0.5,
    which proves it exactly), and CP-SAT's variable scaling so continuous replicas stay (nearly) continuous.
    Integrality tolerances stay at the solvers' defaults: SCIP with numerics/feastol 1e-9 proved a plan 1.8% worse
    than HiGHS's 'optimal' (see solvers.milp.repair_replicas for what the default 1e-6 costs instead).
    ``from_scratch``: a first solve, with no known plan to start from: the backend's ``proof_emphasis``. SCIP's
    optimality emphasis (aggressive cuts, more strong branching) proved mixed-site's first MILP to its 1e-4 gap in
    0.64 s of CPU against 1.21 s, on the same plan; a re-solve handed the plan before it as a hint spends its time
    otherwise, and there the default was faster (0.23 against 0.37 s), so it keeps it. With the emphasis, these small
    MILPs prove faster with no restart after the root (a second presolve once the root fixes many integers) and cuts
    at the root only (``proof_int_params``): mixed-site's first solve 0.47 s against 0.63 s, installed-h100-site's
    0.14 s against 0.19 s, no shipped first solve slower, and every shipped plan the same to the last replica."""
    from ortools.math_opt.python import mathopt

    # A run whose first solve spent its whole limit leaves the tie-break a negative remainder, which MathOpt
    # rejects: no time left is the least limit (solver_seconds; the solver stops at once and the first plan stands).
    params = mathopt.SolveParameters(time_limit=timedelta(seconds=solver_seconds(time_limit_s)),
                                     relative_gap_tolerance=float(relative_gap),
                                     absolute_gap_tolerance=float(absolute_gap))
    if BACKENDS[built.solver].scales_continuous:
        from ortools.sat import sat_parameters_pb2

        params.cp_sat = sat_parameters_pb2.SatParameters(
            mip_var_scaling=getattr(built, "cpsat_var_scaling", 1.0), mip_max_bound=CPSAT_MAX_BOUND,
            mip_wanted_precision=1e-9)
    emphasis = BACKENDS[built.solver].proof_emphasis
    if from_scratch and emphasis:
        from ortools.math_opt.solvers.gscip import gscip_pb2

        params.gscip.emphasis = getattr(gscip_pb2.GScipParameters, emphasis)
        for name, value in BACKENDS[built.solver].proof_int_params:
            params.gscip.int_params[name] = value
    return params


def hint_parameters(solver: str, hint: dict | None):
    """MathOpt's model parameters carrying ``hint`` (variable -> value of a known plan), or None where there is no
    hint or the backend takes none."""
    from ortools.math_opt.python import mathopt

    if not hint or not BACKENDS[solver].takes_hints:
        return None
    return mathopt.ModelSolveParameters(solution_hints=[mathopt.SolutionHint(variable_values=hint)])


def hint_from(*pairs) -> dict:
    """A known plan as variable -> value, for a solve's hint: ``pairs`` of (variables, values), a variable None
    (not in the model) skipped, later pairs overriding earlier ones."""
    hint = {}
    for variables, values in pairs:
        hint.update({v: float(x) for v, x in zip(variables, values) if v is not None})
    return hint


class _Redirect:
    """The one redirection of stdout that solves on several threads share (solver_output_to_stderr)."""

    lock = threading.Lock()
    depth = 0  # solves inside it
    saved: int | None = None  # the duplicate of the original stdout, None when fd 1 is not redirected


@contextlib.contextmanager
def solver_output_to_stderr():
    """Point file descriptor 1 at stderr while a solver runs: the solvers' C++ cores print to it (this HiGHS build
    prints debug lines on large MILPs), and stdout carries a command's JSON. Python's own stdout is flushed first
    and is not used inside. Solves on several threads at once (the report's what-ifs) share one redirection: the
    first in saves stdout, the last out puts it back."""
    with _Redirect.lock:
        if _Redirect.depth == 0:
            sys.stdout.flush()
            try:
                _Redirect.saved = os.dup(1)
            except OSError:  # no file descriptor 1 at all: nothing to protect
                _Redirect.saved = None
            if _Redirect.saved is not None:
                os.dup2(2, 1)
        _Redirect.depth += 1
    try:
        yield
    finally:
        with _Redirect.lock:
            _Redirect.depth -= 1
            if _Redirect.depth == 0 and _Redirect.saved is not None:
                os.dup2(_Redirect.saved, 1)
                os.close(_Redirect.saved)
                _Redirect.saved = None


def on_worker(fn, name: str = "planner-milp"):
    """``fn()`` started on a daemon worker thread; returns the function that waits for it (in short joins, so that
    Ctrl-C, which Python delivers to the main thread only between bytecodes, stops the waiting thread at once rather
    than when a solver's C++ core returns) and gives ``fn``'s result or raises its exception. On an interrupt the
    worker is abandoned: a daemon, it ends with the process, or at its solver's time limit."""
    box: dict = {}

    def run():
        try:
            box["result"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            box["error"] = exc

    worker = threading.Thread(target=run, name=name, daemon=True)
    worker.start()

    def result():
        while worker.is_alive():
            worker.join(0.05)
        if "error" in box:
            raise box["error"]
        return box["result"]

    return result


def interruptible(fn):
    """``fn()`` on a worker thread while this one waits (``on_worker``): Ctrl-C stops the caller at once. The
    solvers release the GIL while they run. This OR-Tools build's SolveInterrupter makes SCIP hang, so it is not
    used."""
    return on_worker(fn)()


def run(built: Built, params, model_params=None, failure: str = "failed or is not in this OR-Tools build"):
    """(MathOpt result, wall seconds) of the solver named by ``built.solver`` on ``built.model``, with stdout kept
    clean and Ctrl-C honoured; a missing or failing solver raises SolverError naming the others (``failure`` says
    how, before the solver's own words)."""
    from ortools.math_opt.python import mathopt

    t0 = time.perf_counter()
    try:
        with solver_output_to_stderr():
            result = interruptible(lambda: mathopt.solve(built.model, solver_types()[built.solver], params=params,
                                                         model_params=model_params))
    except Exception as exc:  # noqa: BLE001 - OR-Tools raises plain RuntimeError/ValueError for missing solvers
        raise SolverError(f"solver {built.solver!r} {failure} ({exc}); try one of: {others(built.solver)}") from exc
    return result, time.perf_counter() - t0


def status_of(result) -> str:
    """The one map from MathOpt's termination to a plan's status (``solvers.vocabulary``): optimal; a plan stopped
    by the time limit is time_limit (as any backend names that limit: TIME_LIMIT_NAMES, HiGHS's UNDETERMINED
    among them), by any other limit feasible; infeasible; no_plan when a limit came before any plan. Anything else
    raises SolverError."""
    from ortools.math_opt.python import mathopt

    R = mathopt.TerminationReason
    reason = result.termination.reason
    if reason == R.OPTIMAL:
        return "optimal"
    if reason == R.FEASIBLE:
        limit = result.termination.limit
        timed = limit is not None and limit.name in TIME_LIMIT_NAMES
        return "time_limit" if timed else "feasible"
    if reason in (R.INFEASIBLE, R.INFEASIBLE_OR_UNBOUNDED):  # never unbounded: every variable is bounded
        return "infeasible"
    if reason == R.NO_SOLUTION_FOUND:
        return NO_PLAN
    raise SolverError(f"solver stopped with {reason.name}: {result.termination.detail!r}; "
                      f"try another of: {', '.join(SOLVERS)}")
