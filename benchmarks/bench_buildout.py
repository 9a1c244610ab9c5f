"""Speed of the shipped build-out (issue 14: a 4-period, 3-scenario, 6-workload site to a 1e-3 gap in under 30 s on
the 2-core development machine): `python benchmarks/bench_buildout.py`. Prints the engine's time (options scored
once for every period), the MILP's per solver, and the myopic and mean-demand comparisons.

`python benchmarks/bench_buildout.py --generated --workloads 10 --periods 2,4,8 --scenarios 1,3 [--sites 1,2,4]
[--solver scip] [--time-limit 300]`: the curve of issue 44 item 5, generated build-outs (``tests.generators.
scale_buildout`` of ``scale_scenario``, split into ``--sites`` sites by ``scale_sites``: its power shared, each
site its own energy and PUE, a third of the workloads pinned to one) of growing periods, demand scenarios and
sites, each in a process of its own: its columns, seconds, gap, status and peak memory, and one JSON line of them
all."""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the shared generators live in tests/
SCENARIO = ROOT / "scenarios" / "buildout-2027-2030.yaml"


def generated(n: int, periods: int, scenarios: int, seed: int, solver: str, time_limit_s: float,
              sites: int = 1) -> dict:
    """One generated build-out solved here (a fresh process: its peak memory is this solve's)."""
    import yaml

    from planner.errors import PlannerError
    from planner.fleet.solve import solve
    from planner.scenario import scenario_from_yaml
    from tests.generators import scale_buildout, scale_scenario, scale_sites

    data = scale_buildout(scale_sites(scale_scenario(n, seed), sites, seed), periods, scenarios, seed)
    sc = scenario_from_yaml(yaml.safe_dump(data)).with_({"solver.time_limit_s": time_limit_s, "solver.name": solver})
    row: dict = {"workloads": n, "sites": sites, "periods": periods, "scenarios": scenarios, "seed": seed}
    t0 = time.perf_counter()
    try:
        plan = solve(sc)
        d = plan.to_dict()
        row.update(wall_s=round(time.perf_counter() - t0, 1), status=d["status"], columns=d["solver"]["columns"],
                   gap=d["solver"]["relative_gap"], engine_s=round(plan.timings["engine_s"], 1),
                   milp_s=round(plan.timings["solve_s"], 1), npc_usd=round(d["net_present_cost_usd"], 0))
    except PlannerError as exc:
        row.update(wall_s=round(time.perf_counter() - t0, 1), status="error", error=str(exc)[:160])
    row["peak_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 0)
    return row


def curve(args) -> None:
    rows = []
    ctx = multiprocessing.get_context("spawn")
    sizes = [(int(n), int(p), int(s)) for n in args.sites.split(",") for p in args.periods.split(",")
             for s in args.scenarios.split(",")]
    for sites, p, s in sizes:
        with ctx.Pool(1) as pool:
            row = pool.apply(generated, (args.workloads, p, s, args.seed, args.solver, args.time_limit, sites))
        rows.append(row)
        print("  ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    print(json.dumps(rows))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--generated", action="store_true")
    ap.add_argument("--workloads", type=int, default=10)
    ap.add_argument("--periods", default="2,4,8")
    ap.add_argument("--scenarios", default="1,3")
    ap.add_argument("--sites", default="1")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--solver", default="scip")
    ap.add_argument("--time-limit", type=float, default=300.0)
    args = ap.parse_args()
    if args.generated:
        curve(args)
        return
    shipped()


def shipped() -> None:
    from planner.fleet.solve import solve
    from planner.scenario import load_scenario

    sc = load_scenario(SCENARIO)
    solve(sc.at_period(0))  # warm the numba cache and imports on the first period alone
    out = {}
    for name in ("scip", "highs"):
        t0 = time.perf_counter()
        plan = solve(sc, solver=name)
        wall = time.perf_counter() - t0
        d = plan.to_dict()
        out[name] = {"wall_s": wall, **{k: round(v, 3) for k, v in plan.timings.items()},
                     "gap": d["solver"]["relative_gap"], "columns": d["solver"]["columns"],
                     "net_present_cost_usd": d["net_present_cost_usd"]}
        print(f"{name:6s} total {wall:5.1f} s  engine {plan.timings['engine_s']:.1f} s  MILP "
              f"{plan.timings['solve_s']:.1f} s  comparisons {plan.timings['comparisons_s']:.1f} s  gap "
              f"{100 * d['solver']['relative_gap']:.3f}%  {d['solver']['columns']} columns")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
