"""Speed and agreement of the fleet MILP's solvers on one random problem, measured in one run.

    python benchmarks/bench_milp.py [--workloads 1000] [--hardware 20] [--options 10] [--time-limit 120]
                                    [--gap 1e-4] [--solvers scip,highs,cp-sat] [--seed 0]

The problem comes from ``tests.generators.random_problem`` (power budget 1.5x the least-power fleet, supply caps
on 30% of the types, 20% of the columns disaggregated over two types). Prints a table (one row per solver: build
and solve seconds, status, objective, proven bound, gap, violations found by ``evaluate``) and, last, one JSON line
with the same figures and the largest relative objective difference between solvers that reported ``optimal``.
"""

from __future__ import annotations

import argparse
import json
import time

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared generators live in tests/

from solvers import milp as F  # noqa: E402
from tests.generators import random_problem  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workloads", type=int, default=1000)
    ap.add_argument("--hardware", type=int, default=20)
    ap.add_argument("--options", type=int, default=10, help="columns per workload")
    ap.add_argument("--time-limit", type=float, default=120.0)
    ap.add_argument("--gap", type=float, default=1e-4, help="relative gap tolerance")
    ap.add_argument("--solvers", default="scip,highs,cp-sat")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    t0 = time.perf_counter()
    problem = random_problem(args.seed, args.workloads, args.hardware, args.options)
    gen_s = time.perf_counter() - t0
    print(f"problem: {problem.n_workloads} workloads x {problem.n_hardware} hardware, {problem.n_columns} columns "
          f"({int(problem.integer_replicas.sum())} integer), generated in {gen_s:.2f} s")
    rows = []
    for name in args.solvers.split(","):
        built = F.build(problem, name)
        sol = F.extract(problem, F.solve(built, args.time_limit, args.gap))
        rows.append(dict(solver=sol.solver, build_s=built.build_seconds, solve_s=sol.solve_seconds,
                         status=sol.status, objective=sol.objective, best_bound=sol.best_bound,
                         relative_gap=sol.relative_gap, racks=int(sol.racks.sum()),
                         violations=len(sol.violations), detail=sol.detail))
    print(f"{'solver':<8}{'build s':>9}{'solve s':>10}  {'status':<11}{'objective':>16}{'bound':>16}{'gap':>10}"
          f"{'racks':>7}{'viol':>6}")
    for r in rows:
        print(f"{r['solver']:<8}{r['build_s']:>9.2f}{r['solve_s']:>10.2f}  {r['status']:<11}{r['objective']:>16,.0f}"
              f"{r['best_bound']:>16,.0f}{r['relative_gap']:>10.2e}{r['racks']:>7}{r['violations']:>6}")
    optimal = [r["objective"] for r in rows if r["status"] == "optimal"]
    spread = (max(optimal) - min(optimal)) / min(optimal) if len(optimal) > 1 else None
    print(json.dumps({"workloads": problem.n_workloads, "hardware": problem.n_hardware,
                      "columns": problem.n_columns, "gap_tolerance": args.gap, "time_limit_s": args.time_limit,
                      "optimal_objective_spread": spread,
                      "solvers": [{k: (None if isinstance(v, float) and not np.isfinite(v) else v)
                                   for k, v in r.items()} for r in rows]}))


if __name__ == "__main__":
    main()
