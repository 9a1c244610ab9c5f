"""End-to-end `planner solve` on every shipped scenario, cold (numba compiles into an empty cache), warm (a new
process with the cache filled) and served (the same command with a `planner serve` of this checkout running), and
`planner --help`. Each figure is one command's wall time; warm and served the least of three.

    python benchmarks/bench_solve.py [--no-cold]

Last line: JSON with per-scenario cold, warm and served seconds and the help time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the executable users run (planner.launcher), where installed; else the module
EXE = Path(sys.executable).parent / "planner"
PLANNER = [str(EXE)] if EXE.exists() else [sys.executable, "-m", "planner.cli"]


def wall(args, env) -> float:
    t0 = time.perf_counter()
    subprocess.run(args, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    results = {}
    cold_too = "--no-cold" not in sys.argv
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory(prefix="ps", dir="/tmp") as folder:
        env = {k: v for k, v in os.environ.items() if k != "PLANNER_NO_SERVER"}
        env = dict(env, NUMBA_CACHE_DIR=cache) if cold_too else env
        alone = dict(env, PLANNER_NO_SERVER="1")
        served = dict(env, PLANNER_SERVER_DIR=folder)
        paths = sorted((ROOT / "scenarios").glob("*.yaml")) + [ROOT / "benchmarks" / "data" / "melange-peer.yaml"]
        for path in paths:
            cold = wall(PLANNER + ["solve", str(path), "--format", "json"], alone) if cold_too and not results \
                else None
            warm = min(wall(PLANNER + ["solve", str(path), "--format", "json"], alone) for _ in range(3))
            results[path.stem] = {"cold_s": cold, "warm_s": warm}
        subprocess.run(PLANNER + ["serve", "--detach"], env=served, check=True, stderr=subprocess.DEVNULL)
        try:
            for path in paths:
                results[path.stem]["served_s"] = min(
                    wall(PLANNER + ["solve", str(path), "--format", "json"], served) for _ in range(3))
        finally:
            subprocess.run(PLANNER + ["serve", "--stop"], env=served, stderr=subprocess.DEVNULL)
        for name, r in results.items():
            cold = r["cold_s"]
            print(f"{name:24s} cold {cold if cold is None else round(cold, 2)!s:>6} s   warm {r['warm_s']:6.2f} s   "
                  f"served {r['served_s']:6.2f} s")
        help_s = min(wall(PLANNER + ["--help"], alone) for _ in range(3))
    print(f"planner --help {help_s:.3f} s")
    print(json.dumps({"solve": results, "help_s": help_s}))


if __name__ == "__main__":
    main()
