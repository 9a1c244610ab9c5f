"""Speed of ``planner simulate``: an hour of peak traffic through a solved plan scaled to a given rate.

    python benchmarks/bench_sim.py [--scenario scenarios/bank-2mw.yaml] [--rate 10000] [--duration 3600] [--seed 0]

Solves the scenario, scales every workload's rate and every allocation row's replicas (so the pools keep their
load) until the workloads together arrive at ``--rate`` requests/s, compiles the simulator with a short run, then
times the whole simulation. Prints one JSON line: requests simulated, seconds, requests per second of wall time,
and whether the plan held.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner import load_scenario, solve  # noqa: E402
from planner.sim import simulate  # noqa: E402
from solvers.jit import thread_count  # noqa: E402


def scaled_plan(plan: dict, rate_per_s: float) -> dict:
    """The plan with its demands and pools scaled by one factor so that the workloads arrive at ``rate_per_s``."""
    total = sum(d["calls_per_s"] for d in plan["inputs"]["demands"])
    k = rate_per_s / total
    for d in plan["inputs"]["demands"]:
        for key in ("calls_per_s", "output_tokens_per_s", "prefill_tokens_per_s"):
            d[key] *= k
    for row in plan["allocation"]:
        for key in ("replicas", "output_tokens_per_s", "prefill_tokens_per_s"):
            if row.get(key) is not None:
                row[key] *= k
    return plan


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", default="scenarios/bank-2mw.yaml")
    ap.add_argument("--rate", type=float, default=10_000.0, help="requests/s of all workloads together")
    ap.add_argument("--duration", type=float, default=3600.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    plan = scaled_plan(json.loads(json.dumps(solve(load_scenario(args.scenario)).to_dict())), args.rate)
    simulate(plan, duration_s=5.0, seed=args.seed)  # compiles (or loads) the kernels
    t0 = time.perf_counter()
    result = simulate(plan, duration_s=args.duration, seed=args.seed)
    wall = time.perf_counter() - t0
    requests = sum(w.requests + w.api_requests for w in result.workloads)
    print(json.dumps({"scenario": args.scenario, "rate_per_s": args.rate, "duration_s": args.duration,
                      "threads": thread_count(), "requests": requests, "wall_s": round(wall, 2),
                      "requests_per_wall_s": round(requests / wall), "holds": result.holds}))


if __name__ == "__main__":
    main()
