"""End-to-end `planner solve` on every shipped scenario, cold (numba compiles into an empty cache) and warm
(a new process with the cache filled), and `planner --help`. Each figure is one fresh process's wall time.

    python benchmarks/bench_solve.py

Last line: JSON with per-scenario cold and warm seconds and the help time.
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
PLANNER = [sys.executable, "-m", "planner.cli"]


def wall(args, env) -> float:
    t0 = time.perf_counter()
    subprocess.run(args, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    results = {}
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        for path in sorted((ROOT / "scenarios").glob("*.yaml")):
            cold = wall(PLANNER + ["solve", str(path), "--format", "json"], env) if not results else None
            warm = min(wall(PLANNER + ["solve", str(path), "--format", "json"], env) for _ in range(2))
            results[path.stem] = {"cold_s": cold, "warm_s": warm}
            print(f"{path.stem:24s} cold {cold if cold is None else round(cold, 2)!s:>6} s   warm {warm:6.2f} s")
        help_s = min(wall(PLANNER + ["--help"], env) for _ in range(3))
    print(f"planner --help {help_s:.3f} s")
    print(json.dumps({"solve": results, "help_s": help_s}))


if __name__ == "__main__":
    main()
