"""Speed and quality of the robust fleet (issue 15; docs/OPTIMIZER.md 8): N Latin-hypercube samples of bank-2mw
(B200 capex, electricity, one workload's rate), solved as the mean and as a percentile by SCIP and by HiGHS, with
and without a late premium, each within the same time limit; and the base plan's regret beside the robust fleet's.
`python benchmarks/bench_robust.py [N] [TIME_LIMIT_S]`."""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SWEEP = """base: {base}
axes:
  - {{path: hardware.overrides.hgx-b200.capex_usd, distribution: {{uniform: [3.0e+5, 6.0e+5]}}}}
  - {{path: finance.electricity_usd_per_mwh, range: [40, 160]}}
  - {{path: workloads.employee-assistant.requests_per_s, distribution: {{uniform: [200, 500]}}}}
samples: {{method: lhs, n: {n}, seed: 1}}
robustness: {{late_premium: 0.3}}
"""


def samples(n: int) -> dict:
    """Each solved variant's FleetProblem, from one sweep (captured where the robust fleet is built)."""
    import planner.sweep.robust as R
    from planner.sweep.run import sweep

    box = {}

    def keep(samples, *args, **kw):
        box.update(problems={v: s[0] for v, s in samples.items()})
        raise StopIteration

    original, R.robust_fleet = R.robust_fleet, keep
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "sweep.yaml"
            path.write_text(SWEEP.format(base=ROOT / "scenarios" / "bank-2mw.yaml", n=n))
            try:
                sweep(path, workers=2, robust="mean")
            except StopIteration:
                pass
    finally:
        R.robust_fleet = original
    return box


def main() -> None:
    from solvers import robust as SR

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    limit = float(sys.argv[2]) if len(sys.argv) > 2 else 30.0
    box = samples(n)
    order = sorted(box["problems"])
    problems = [box["problems"][v] for v in order]
    print(f"{len(problems)} samples, {problems[0].n_columns} columns each "
          f"({int(problems[0].integer_replicas.sum())} integer)")
    out = {"samples": len(problems), "columns": problems[0].n_columns, "time_limit_s": limit, "runs": []}
    for late in (None, 0.3):
        for q in (None, 80.0):
            for solver in ("scip", "highs"):
                p = SR.RobustProblem(problems, percentile=q, late_premium=late)
                t0 = time.perf_counter()
                sol = SR.optimize(p, solver, limit, 1e-3)
                wall = time.perf_counter() - t0
                run = {"late_premium": late, "statistic": p.statistic, "solver": solver, "status": sol.status,
                       "value_usd_per_year": sol.value, "mean_usd_per_year": sol.mean, "relative_gap": sol.relative_gap,
                       "wall_s": wall, "racks": sol.racks.tolist()}
                out["runs"].append(run)
                print(f"late {late}, {p.statistic:>4}, {solver:>5}: {sol.status:>10} {sol.value / 1e6:8.3f} M USD/yr "
                      f"(mean {sol.mean / 1e6:.3f} M), gap {100 * sol.relative_gap:.2f}%, {wall:.1f} s, racks "
                      f"{sol.racks.astype(int).tolist()}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
