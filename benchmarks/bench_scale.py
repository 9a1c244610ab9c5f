"""Time and memory of a solve against its size (issue 44): generated sites (``tests.generators.scale_scenario``)
of 5 to 200 workloads, each solved in a process of its own, its phases timed.

    python benchmarks/bench_scale.py [--workloads 5,10,20] [--sites 1,2,4,8] [--seeds 0] [--time-limit 300]
                                     [--solver scip] [--start-columns N]

One row per (workloads, seed): the options scored (columns, candidates) and their seconds, the whole solve's seconds
(scoring reused: the time limit covers the MILPs and the rounds that size pools again, docs/OPTIMIZER.md 14, 18-20),
its status, gap and objective, whether its pools were sized on its own columns (OPTIMIZER.md 20), check's seconds,
and the process's peak memory; last, one JSON line with the same figures. ``--sites``: each generated site split
into that many (``tests.generators.scale_sites``: its power shared, each site its own energy and PUE, a third of the
workloads pinned to one site), one plan over them all (docs/OPTIMIZER.md 21).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared generators live in tests/


def measure(n: int, seed: int, time_limit_s: float, solver: str, sites: int = 1,
            start_columns: int | None = None) -> dict:
    """One size solved here (a fresh process: its peak memory is this solve's). ``start_columns``: the MILPs from
    this many columns on begin from the rounded LP plan (solvers.milp.ROUNDED_START_COLUMNS; None: its value)."""
    import yaml

    from solvers import milp

    from planner.errors import PlannerError
    from planner.fleet import solve as S
    from planner.fleet.check import check
    from planner.fleet.problem import build_problem
    from planner.scenario import scenario_from_yaml
    from tests.generators import scale_scenario, scale_sites

    if start_columns is not None:
        milp.ROUNDED_START_COLUMNS = start_columns
    sc = scenario_from_yaml(yaml.safe_dump(scale_sites(scale_scenario(n, seed), sites, seed))).with_(
        {"solver.time_limit_s": time_limit_s, "solver.name": solver})
    row: dict = {"workloads": n, "sites": sites, "seed": seed}
    t0 = time.perf_counter()
    built = build_problem(sc)
    row.update(columns=built.problem.n_columns, candidates=built.candidates_scored,
               scoring_s=round(time.perf_counter() - t0, 2))
    t2 = time.perf_counter()
    try:
        plan = S.solve(sc, options_from=built)
        d = plan.to_dict()["solver"]
        row.update(solve_s=round(time.perf_counter() - t2, 2), status=plan.status,
                   gap=None if d["relative_gap"] is None else round(d["relative_gap"], 5),
                   own_columns=bool(d.get("heuristic")), objective=round(plan.objective_usd_per_year, 0),
                   start=d.get("start"))
        t3 = time.perf_counter()
        failed = [c for c in check(plan) if not c["ok"]]
        row.update(check_s=round(time.perf_counter() - t3, 2), checks_failed=len(failed))
    except PlannerError as exc:
        row.update(solve_s=round(time.perf_counter() - t2, 2), status="error", error=str(exc)[:160])
    row["peak_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 0)
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workloads", default="5,10,20")
    ap.add_argument("--sites", default="1")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--time-limit", type=float, default=300.0)
    ap.add_argument("--solver", default="scip")
    ap.add_argument("--start-columns", type=int, default=None,
                    help="begin the MILPs of this many columns or more from the rounded LP plan (a huge number: "
                         "never); default solvers.milp.ROUNDED_START_COLUMNS")
    args = ap.parse_args()
    rows = []
    ctx = multiprocessing.get_context("spawn")
    sizes = [(int(n), int(s), int(seed)) for n in args.workloads.split(",") for s in args.sites.split(",")
             for seed in args.seeds.split(",")]
    for n, sites, seed in sizes:
        with ctx.Pool(1) as pool:
            row = pool.apply(measure, (n, seed, args.time_limit, args.solver, sites, args.start_columns))
        rows.append(row)
        print("  ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
