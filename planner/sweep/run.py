"""Running a sweep (docs/INTERFACE.md 2.9): every variant solved like ``planner solve``, on a process pool
(``local``, the default) or on Ray (``ray``, an optional extra), into one Polars table whose rows are the same,
in the same order, on either engine.

Variants that change only what the engine's options do not depend on (prices, budgets, caps, request rates:
``reuses_options``) reuse the base scenario's scored options and solve only the MILP; any other change rescores. A
failed variant is a row with its status and error; it never stops the sweep.
"""

from __future__ import annotations

import fnmatch
import math
import os
import sys
from dataclasses import dataclass

from planner.errors import InfeasibleError, InputError, PlannerError
from planner.fleet.problem import build_problem, type_ids_of
from planner.fleet.solve import solve
from planner.perf.pack import efficiency_key
from planner.perf.uncertainty import uncertain_quantities
from planner.scenario import load_scenario
from planner.sweep import robust as R
from planner.sweep.robust import base_plan_columns, base_plan_in
from planner.sweep.sample import ResolvedAxis, variants
from planner.sweep.spec import load_sweep
from planner.sweep.workers import end_pool, worker_init
from solvers.milp import solver_output_to_stderr

# Scenario paths whose change leaves every scored option as it is: costs, limits and demand rates.
OPTION_FREE = ("finance.*", "site.*", "prices_usd_per_mtok*", "objective", "solver.*", "hardware.max_racks*",
               "hardware.min_racks*", "hardware.max_platforms", "hardware.overrides.*.capex_usd",
               "workloads.*.requests_per_s", "workloads.*.peak_to_mean", "workloads.*.price_usd_per_mtok",
               # a site's limits and energy (docs/OPTIMIZER.md 21), not what it may hold or has installed
               "sites.*.power_budget_mw", "sites.*.pue", "sites.*.electricity_usd_per_mwh", "sites.*.max_racks",
               "sites.*.grid_kg_co2_per_mwh")
ENGINES = ("local", "ray")
ROBUST_MIN_SECONDS = 60.0  # the robust fleet's default time limit is the base scenario's, at least this


def reuses_options(paths: list[str]) -> bool:
    return all(any(fnmatch.fnmatchcase(p, pat) for pat in OPTION_FREE) for p in paths)


@dataclass(frozen=True)
class Setting:
    """How one axis's value reaches the scenario: a --set path, or a catalog override of one system's field
    (``scale`` converts the band's unit to the catalog's: rack power is banded in W, written in kW)."""

    axis: str
    path: str | None = None
    hardware: str | None = None
    field: str | None = None
    scale: float = 1.0


def _override_field(name: str) -> tuple[str, float]:
    """A band name's field (``memory[0].bandwidth_bytes_per_s``) as a catalog override path."""
    if name == "rack.power_kw":
        return "rack.power_kw", 1e-3
    field = name.replace("[", ".").replace("]", "")
    return ("chip." + field if not field.startswith("rack.") else field), 1.0


def resolve_axes(spec, base) -> tuple[list[ResolvedAxis], list[Setting]]:
    """Each axis's values (an uncertain figure's range from its band unless given) and where it goes."""
    bands = {}
    for hw in base.resolved_hardware().values():
        for q in uncertain_quantities(hw, hw.precision_or_best(None)):
            bands.setdefault(q.name, (q, efficiency_key(hw)))
    resolved, settings = [], []
    for i, a in enumerate(spec.axes):
        low = high = None
        if a.uncertain is not None:
            if a.uncertain not in bands:
                known = ", ".join(sorted(bands)[:8])
                raise InputError(f"no uncertain figure {a.uncertain!r} among the base scenario's systems (e.g. "
                                 f"{known}, ...; planner estimate --format json lists each one's band)",
                                 field=f"axes[{i}].uncertain")
            q, family = bands[a.uncertain]
            low, high = q.low, q.high
            head, _, tail = a.uncertain.partition(".")
            if head == family:
                settings.append(Setting(a.name, path=f"efficiency.{head}.{tail}"))
            else:
                field, scale = _override_field(tail)
                settings.append(Setting(a.name, hardware=head, field=field, scale=scale))
        else:
            settings.append(Setting(a.name, path=a.path))
        if a.range is not None:
            low, high = a.range
        dist = a.distribution
        if dist is not None and dist.uniform is not None:
            low, high = dist.uniform
        resolved.append(ResolvedAxis(a.name, tuple(a.values) if a.values is not None else None, low, high, a.steps,
                                     tuple(dist.normal) if dist is not None and dist.normal is not None else None))
    return resolved, settings


def settings_of(base, settings: list[Setting], values: dict) -> dict:
    """The ``Scenario.with_`` mapping of one variant: paths as given, catalog overrides merged per system with
    the base scenario's own."""
    out, overrides = {}, {}
    for s in settings:
        value = values[s.axis]
        if s.path is not None:
            out[s.path] = value
        else:
            merged = overrides.setdefault(s.hardware, dict(base.hardware.overrides.get(s.hardware, {})))
            merged[s.field] = value * s.scale
    for hw, fields in overrides.items():
        out[f"hardware.overrides.{hw}"] = fields
    return out


def row_of(index: int, values: dict, plan=None, status: str = "", error: str | None = None,
           hardware=(), workloads=(), unit: str | None = None, found=None) -> dict:
    """One row of the sweep table: the variant, its axis values, and what its plan says (with ``unit``: the base
    plan's value and regret in it, from ``found``: ``planner.sweep.robust.base_plan_in``)."""
    row = {"variant": index, **values, "status": status or (plan.status if plan is not None else "error"),
           "objective_usd_per_year": None, "power_mw": None, "facility_power_mw": None}
    row.update({f"racks.{h}": None for h in hardware})
    row.update({f"cost_usd_per_mtok.{w}": None for w in workloads})
    row.update({f"served_share.{w}": None for w in workloads})
    solved = plan is not None and plan.status in ("optimal", "feasible", "time_limit")
    if getattr(plan, "is_buildout", False) or (plan is None and unit == BUILDOUT):
        return buildout_row_of(index, values, plan if solved else None, row["status"], error, hardware)
    if solved:
        t = plan.totals
        row.update(objective_usd_per_year=plan.objective_usd_per_year, power_mw=t["power_mw"],
                   facility_power_mw=t["facility_power_mw"])
        racks = {r["hardware"]: r["racks"] for r in plan.fleet.to_dicts()}
        row.update({f"racks.{h}": racks.get(h, 0) for h in hardware})
        for w in plan.workloads.to_dicts():
            row[f"cost_usd_per_mtok.{w['workload']}"] = w["cost_usd_per_mtok"]
            row[f"served_share.{w['workload']}"] = w["served_share"]
    if unit is not None:
        row.update(base_plan_columns(found if solved else None, plan.solution.objective if solved else None, unit))
    row["error"] = error
    return row


BUILDOUT = "buildout"  # the ``unit`` of a build-out sweep's rows: no regret, the build-out's own columns


def buildout_row_of(index: int, values: dict, plan, status: str, error: str | None, hardware) -> dict:
    """One row of a build-out sweep: the variant, its axis values, the expected net present cost (and the myopic
    plan's beside it) and the first period's order per system."""
    row = {"variant": index, **values, "status": status, "net_present_cost_usd": None,
           "myopic_net_present_cost_usd": None}
    row.update({f"first_order.{h}": None for h in hardware})
    if plan is not None:
        row.update(net_present_cost_usd=plan.net_present_cost_usd,
                   myopic_net_present_cost_usd=plan.myopic_net_present_cost_usd)
        order = {r["hardware"]: r["racks"] for r in plan.first_period_order}
        row.update({f"first_order.{h}": int(order.get(h, 0)) for h in hardware})
    row["error"] = error
    return row


def solve_chunk(base, settings: list[Setting], chunk: list[tuple[int, dict]], shared, hardware: list[str],
                workloads: list[str], base_fleet=None, unit: str | None = None,
                keep_problems: bool = False) -> tuple[list[dict], dict]:
    """Solve a chunk of variants (in a worker process or a Ray task): (rows, {variant: (FleetProblem, optimum, the
    base plan in it)} of the solved ones when ``keep_problems``, for a robust fleet). ``shared``: the base's Built,
    whose scored options every variant reuses when every axis leaves them unchanged (else None: each scores its own);
    ``base_fleet``/``unit``: the base plan whose regret each row gets (``planner.sweep.robust``)."""
    rows, problems = [], {}
    kw = {"hardware": hardware, "workloads": workloads, "unit": unit}
    for index, values in chunk:
        try:
            sc = base.with_(settings_of(base, settings, values))
            plan = solve(sc, options_from=shared)
            found = base_plan_in(plan, base_fleet) if unit not in (None, BUILDOUT) else None
            rows.append(row_of(index, values, plan, found=found, **kw))
            if keep_problems and plan.solution is not None:
                problems[index] = (plan.built.problem, plan.solution.objective, found)
        except InfeasibleError as exc:
            rows.append(row_of(index, values, status="infeasible", error=str(exc).splitlines()[0], **kw))
        except (PlannerError, ValueError) as exc:  # a variant's bad value or a solver failure: recorded
            rows.append(row_of(index, values, status="error", error=str(exc).splitlines()[0], **kw))
    return rows, problems


def _chunks(items: list, n: int) -> list[list]:
    size = max(1, math.ceil(len(items) / n))
    return [items[i:i + size] for i in range(0, len(items), size)]


@dataclass
class SweepOutcome:
    """A sweep's table (Polars), and with ``robust`` the robust fleet's summary (``planner.sweep.robust``)."""

    table: object
    robust: dict | None = None
    base_plan: object = None  # the base scenario's Plan (None when it has none)
    robust_outcome: object = None  # planner.sweep.robust.RobustOutcome
    robust_error: PlannerError | None = None  # why --robust found no fleet, or why the engine stopped midway
    # (SweepIncomplete): the table stands without it, and the CLI raises it after the table


def run_sweep(path, engine: str = "local", address: str | None = None, workers: int | None = None,
              progress=None, regret: bool = True):
    """The sweep table (Polars) of a sweep file, one row per variant in variant order. An engine that lost a
    worker midway raises SweepIncomplete, its ``table`` the variants that finished."""
    outcome = sweep(path, engine, address, workers, progress, regret)
    if isinstance(outcome.robust_error, SweepIncomplete):
        raise outcome.robust_error
    return outcome.table


def sweep(path, engine: str = "local", address: str | None = None, workers: int | None = None, progress=None,
          regret: bool = True, robust: str | None = None, base_scenario=None) -> SweepOutcome:
    """Every variant of a sweep file solved; ``regret``: each row gets the base plan's value and regret;
    ``robust`` (``mean`` or ``pNN``): the robust fleet over the solved variants, and each row its value and regret.
    ``base_scenario``: a Scenario to vary in place of the sweep file's ``base`` (``planner solve --robust``)."""
    import polars as pl

    if engine not in ENGINES:
        raise InputError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}", field="--engine")
    percentile = R.parse_statistic(robust) if robust is not None else None
    spec, base_path = load_sweep(path)
    base = base_scenario if base_scenario is not None else load_scenario(base_path)
    if base.periods and robust is not None:
        raise InputError("robust fleets of build-outs over periods are not supported yet; sweep the build-out "
                         "without --robust, or a single-period scenario with it", field="--robust")
    late_premium = spec.robustness.late_premium
    if late_premium is not None and base.objective == "min_power":
        raise InputError("a late premium needs a cost objective (min_cost or max_revenue): a rack bought late draws "
                         "the same power", field="robustness.late_premium")
    axes, settings = resolve_axes(spec, base)
    drawn = variants(axes, spec.samples.method, spec.samples.n, spec.samples.seed)
    if robust is not None and len(drawn) > R.MAX_ROBUST_SAMPLES:  # refused before any variant is solved (issue 28)
        raise InputError(f"{len(drawn)} samples; a robust fleet takes at most {R.MAX_ROBUST_SAMPLES} (every sample's "
                         f"options are in one MILP): lower samples.n", file=str(path), field="samples.n")
    if drawn:  # a bad value fails here once, naming its axis, rather than in every variant
        base.with_(settings_of(base, settings, drawn[0]))
    reuse = not base.periods and reuses_options([s.path for s in settings if s.path is not None]) and all(
        s.path is not None for s in settings)  # a build-out scores its own options once per variant
    shared = build_problem(base) if reuse else None  # scored once here, shipped to every worker
    if shared is not None:
        shared.__dict__.pop("inputs", None)  # a cached property: recomputed per variant from its own scenario
    base_plan = base_fleet = unit = None
    if base.periods:
        unit = BUILDOUT  # a build-out's rows: its present costs and first order, no regret (not yet)
    elif regret or robust is not None:
        unit = R.objective_unit(base.objective)
        try:
            base_plan = solve(base, options_from=shared)
            base_fleet = R.base_fleet_of(base_plan, reuse, late_premium)
        except InfeasibleError:
            base_plan = None  # no base plan: its regret columns stay null
    hardware = type_ids_of(base)  # the plans' hardware types: over several sites system@site (racks.<type> columns)
    workloads = [w.name for w in base.workloads]
    jobs = list(enumerate(drawn))
    workers = workers or os.cpu_count() or 1
    chunks = _chunks(jobs, workers * 4)
    args = (base, settings)
    extra = (base_fleet, unit, robust is not None)  # a robust fleet is compared with the base plan's regret
    lost = None
    try:
        parts = (_run_local(args, chunks, shared, hardware, workloads, extra, workers, progress)
                 if engine == "local" else _run_ray(args, chunks, shared, hardware, workloads, extra, address, progress))
    except SweepIncomplete as exc:  # the variants that finished, then one error line (exit 1)
        parts, lost = exc.parts, exc
    rows = sorted((r for part, _ in parts for r in part), key=lambda r: r["variant"])
    table = pl.DataFrame(rows, infer_schema_length=None)
    outcome = SweepOutcome(table, base_plan=base_plan)
    if lost is not None:
        if not rows:
            raise lost  # nothing finished: the error alone
        lost.table = table  # the library's run_sweep raises it with the table of what finished
        outcome.robust_error = lost  # no robust fleet over part of the samples: the table, then the error
        return outcome
    if robust is not None:
        kept = {k: v for _, part in parts for k, v in part.items()}
        if progress:
            progress(0, 1, f"the robust fleet over {len(kept)} variants ({spec.robustness.solver})")
        r = spec.robustness
        limit = r.time_limit_s or max(ROBUST_MIN_SECONDS, base.solver.time_limit_s)
        gap = base.solver.relative_gap if r.relative_gap is None else r.relative_gap
        try:
            res = R.robust_fleet(kept, hardware, percentile, r.solver, limit, gap, late_premium, base_fleet)
        except InputError:
            raise
        except PlannerError as exc:  # no robust fleet (infeasible, or the solver's limit): the variants still stand
            outcome.robust_error = exc
            return outcome
        outcome.table = R.robust_columns(table, res, unit)
        outcome.robust = R.robust_summary(outcome.table, res, base_fleet, unit)
        outcome.robust_outcome = res
    return outcome


def _run_local(args, chunks, shared, hardware, workloads, extra, workers, progress) -> list[tuple]:
    """Each chunk's (rows, problems), on a process pool (or here, with one worker)."""
    import concurrent.futures as cf

    parts = []
    if workers == 1:
        for k, chunk in enumerate(chunks):
            parts.append(solve_chunk(*args, chunk, shared, hardware, workloads, *extra))
            if progress:
                progress(k + 1, len(chunks), "variants")
        return parts
    pool = process_pool(workers)
    try:
        futures = [pool.submit(solve_chunk, *args, chunk, shared, hardware, workloads, *extra) for chunk in chunks]
        for k, future in enumerate(cf.as_completed(futures)):
            parts.append(future.result())
            if progress:
                progress(k + 1, len(chunks), "variants")
    except BaseException:
        end_pool(pool)
        raise
    pool.shutdown(wait=True)
    return parts


# An interrupted sweep ends at once (planner.interrupts.stop: os._exit, no finalizers), which leaves the pool's queue
# semaphores to multiprocessing's resource tracker: it unlinks them, and warned of each "leaked" one on the stderr it
# shares, after the one line "error: interrupted" (seen in a CI run). The tracker takes this process's warnings
# options (sys.warnoptions, handed to it as -W when the pool's first semaphore starts it): the warning is ignored
# there, the clean-up still done.
TRACKER_QUIET = "ignore::UserWarning:multiprocessing.resource_tracker"


def process_pool(workers: int):
    """A pool of ``workers`` spawned processes (no fork of the solvers' threads), each of which dies with this
    process (planner.sweep.workers), its resource tracker quiet about what an interrupt leaves it to clean."""
    import concurrent.futures as cf
    import multiprocessing

    if TRACKER_QUIET not in sys.warnoptions:
        sys.warnoptions.append(TRACKER_QUIET)
    return cf.ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                  initializer=worker_init, initargs=(os.getpid(),))


RAY_LOGS = "/tmp/ray/session_latest/logs"  # where Ray keeps its own logs (its default temp dir)


class SweepIncomplete(PlannerError):
    """The engine lost a worker, a node or its agent: ``parts`` holds the chunks that finished, whose rows the
    sweep still shows (then this error's one line, exit 1)."""

    def __init__(self, message: str, parts: list):
        super().__init__(message)
        self.parts = parts


def _run_ray(args, chunks, shared, hardware, workloads, extra, address, progress) -> list[tuple]:
    """Each chunk's (rows, problems), as Ray tasks (the base scenario and the shared options put once). Ray's own
    output never reaches stdout, which carries the table: its workers' logs are not forwarded (log_to_driver off)
    and while Ray runs, file descriptor 1 and sys.stdout point at stderr (its raylet, dashboard and worker-death
    lines land there, and in its session logs). A worker, node or agent lost midway raises SweepIncomplete with the
    chunks that finished."""
    import contextlib
    import sys

    try:
        import ray
    except ImportError:
        raise PlannerError("the ray engine needs Ray: pip install 'planner[ray]' (or use --engine local)") from None
    parts: list = []
    with solver_output_to_stderr(), contextlib.redirect_stdout(sys.stderr):
        started = not ray.is_initialized()
        if started:
            try:
                ray.init(address=address, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
            except Exception as exc:  # noqa: BLE001 - Ray raises many kinds for a cluster it cannot reach or start
                raise PlannerError(f"the ray engine could not start ({_first_line(exc)}); Ray's own logs are on "
                                   f"stderr and in {RAY_LOGS}") from None
        try:
            task = ray.remote(solve_chunk)
            base_ref = ray.put(args[0])
            shared_ref = ray.put(shared)
            pending = [task.remote(base_ref, args[1], chunk, shared_ref, hardware, workloads, *extra)
                       for chunk in chunks]
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                parts.append(ray.get(ready[0]))
                if progress:
                    progress(len(parts), len(chunks), "variants")
        except (KeyboardInterrupt, PlannerError):
            raise
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - a lost worker, node or agent, in any of Ray's kinds
            done = sum(len(rows) for rows, _ in parts)
            total = sum(len(c) for c in chunks)
            raise SweepIncomplete(f"the ray engine lost a worker or its agent ({_first_line(exc)}); the table holds "
                                  f"the {done} of {total} variants that finished; Ray's own logs are on stderr and "
                                  f"in {RAY_LOGS}", parts) from None
        finally:
            if started:
                with contextlib.suppress(Exception):
                    ray.shutdown()
    return parts


def _first_line(exc: BaseException) -> str:
    text = (str(exc).strip().splitlines() or [""])[0]
    text = type(exc).__name__ + (f": {text}" if text else "")
    return text if len(text) <= 200 else text[:197] + "..."
