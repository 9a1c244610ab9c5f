"""Speed of sweeps (issue 15): N price-and-budget variants of a shipped scenario on the local engine (the issue asks
1,000 in under 3 minutes on the 2-core development machine), and the Ray engine with 1 and 2 workers on a smaller
sweep, with its overhead per variant against the local engine; the base plan's regret on and off.
`python benchmarks/bench_sweep.py [N] [N_RAY]`."""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SWEEP = """base: {base}
axes:
  - {{path: finance.electricity_usd_per_mwh, range: [40, 160]}}
  - {{path: finance.wacc, range: [0.05, 0.12]}}
  - {{path: site.power_budget_mw, range: [2.2, 3.0]}}
  - {{path: hardware.overrides.hgx-b200.capex_usd, distribution: {{uniform: [3.0e+5, 6.0e+5]}}}}
samples: {{method: lhs, n: {n}, seed: 1}}
"""


def timed(path, **kw) -> tuple[float, object]:
    from planner.sweep.run import run_sweep

    t0 = time.perf_counter()
    table = run_sweep(path, **kw)
    return time.perf_counter() - t0, table


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    n_ray = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        base = ROOT / "scenarios" / "bank-2mw.yaml"
        big, small = Path(tmp) / "big.yaml", Path(tmp) / "small.yaml"
        big.write_text(SWEEP.format(base=base, n=n))
        small.write_text(SWEEP.format(base=base, n=n_ray))
        wall, table = timed(big, workers=2)
        out["local_2_workers"] = {"variants": n, "wall_s": wall, "per_variant_s": wall / n,
                                  "solved": int((table["status"] == "optimal").sum())}
        print(f"local, 2 workers: {n} variants in {wall:.1f} s ({1e3 * wall / n:.0f} ms each), with the base plan's "
              f"regret in each")
        bare, _ = timed(big, workers=2, regret=False)
        out["local_2_workers_no_regret"] = {"variants": n, "wall_s": bare}
        print(f"local, 2 workers, --no-regret: {n} variants in {bare:.1f} s (regret costs {wall / bare - 1:+.0%})")
        local_small, reference = timed(small, workers=2)
        try:
            import ray
        except ImportError:
            print("ray: not installed (pip install 'planner[ray]')")
        else:
            for workers in (1, 2):
                ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
                try:
                    wall, table = timed(small, engine="ray")
                finally:
                    ray.shutdown()
                same = table.equals(reference)
                out[f"ray_{workers}_workers"] = {"variants": n_ray, "wall_s": wall, "same_table": same}
                print(f"ray, {workers} worker(s): {n_ray} variants in {wall:.1f} s ({1e3 * wall / n_ray:.0f} ms "
                      f"each); local 2 workers {local_small:.1f} s; same table: {same}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
