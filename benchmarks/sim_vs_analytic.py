"""The plan's closed-form TTFT beside the simulated one, pool by pool, on every shipped scenario (MODEL.md 16.4).

    python benchmarks/sim_vs_analytic.py [--duration S] [--seed N] [--set PATH=VALUE ...]

Solves each scenario of scenarios/ (build-outs skipped: simulate takes a single period), simulates its plan at the
peak, and prints one Markdown table: per prefill or colocated pool with at least 1,000 simulated requests, its
servers, planned and simulated utilization, and TTFT at the workload's percentile by the M/G/c closed form and by
simulation; then each workload's verdict.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner import load_scenario, solve  # noqa: E402
from planner.sim import simulate  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MIN_REQUESTS = 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=float, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--set", dest="settings", action="append", default=[])
    args = ap.parse_args()
    print("| scenario | workload | pool | servers | utilization planned / simulated | TTFT pNN closed form s | "
          "simulated s | simulated / closed form |")
    print("|---|---|---|---:|---|---:|---:|---:|")
    verdicts = []
    for path in sorted((ROOT / "scenarios").glob("*.yaml")):
        sc = load_scenario(path, args.settings)
        if sc.periods:
            continue
        plan = json.loads(json.dumps(solve(sc).to_dict()))
        sim = simulate(plan, duration_s=args.duration, seed=args.seed).to_dict()
        planned = {(r["workload"], r["hardware"], r["role"]): r for r in plan["allocation"]}
        for p in sim["pools"]:
            if not p["requests"] or p["requests"] < MIN_REQUESTS or p["analytic_ttft_s"] is None:
                continue
            row = planned[(p["workload"], p["hardware"], p["role"])]
            util = row["utilization"] if row["role"] == "prefill" else row["prefill_share"]
            ratio = p["ttft_at_target_percentile_s"] / p["analytic_ttft_s"]
            print(f"| {path.stem} | {p['workload']} | {p['role']} on {p['hardware']} | {p['servers']} | "
                  f"{util:.3f} / {p['utilization']:.3f} | {p['analytic_ttft_s']:.4g} | "
                  f"{p['ttft_at_target_percentile_s']:.4g} | {ratio:.3f} |")
        for w in sim["workloads"]:
            verdicts.append(f"{path.stem} {w['workload']}: " + ("holds" if w["holds"] else "; ".join(w["failures"])))
    print()
    for line in verdicts:
        print("-", line)


if __name__ == "__main__":
    main()
