"""Throughput of the jitted performance model against its plain-Python twin, measured in one run.

    python benchmarks/bench_perf_model.py [--n 2000000]

Prints a table and, last, one JSON line: decode configurations scored per second by the jitted sweep
(`jit_configs_per_s`), by the plain-Python twin (`python_configs_per_s`), and their ratio.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from planner import catalog
from planner.perf.pack import hardware_vector, model_vector
from solvers.perf import twin as reference
from solvers.perf.sweep import decode_sweep


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2_000_000, help="configurations for the jitted sweep")
    ap.add_argument("--n-python", type=int, default=20_000, help="configurations for the Python twin")
    args = ap.parse_args()

    model, hw = catalog.get_model("deepseek-r1"), catalog.get_hardware("gb200-nvl72")
    mv, hv = model_vector(model), hardware_vector(hw, "fp4")
    rng = np.random.default_rng(0)
    tp = rng.choice([1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0], args.n)
    pp = rng.integers(1, 17, args.n).astype(float)
    ep = rng.integers(0, 2, args.n).astype(float)
    streams = np.round(np.exp(rng.uniform(0, np.log(4096), args.n)))

    decode_sweep(mv, hv, tp[:10], pp[:10], ep[:10], streams[:10], 3000.0, 4000.0, 0.0, 1.0)  # compile or load
    t0 = time.perf_counter()
    decode_sweep(mv, hv, tp, pp, ep, streams, 3000.0, 4000.0, 0.0, 1.0)
    jit_s = time.perf_counter() - t0

    n_py = args.n_python
    t0 = time.perf_counter()
    for i in range(n_py):
        reference.decode(mv, hv, tp[i], pp[i], ep[i], streams[i], 3000.0, 4000.0, 1.0, 1.0)
    py_s = time.perf_counter() - t0

    jit_rate, py_rate = args.n / jit_s, n_py / py_s
    print(f"jitted sweep : {args.n:>10,} configs in {jit_s:8.3f} s  = {jit_rate:14,.0f} /s")
    print(f"python twin  : {n_py:>10,} configs in {py_s:8.3f} s  = {py_rate:14,.0f} /s")
    print(json.dumps({"jit_configs_per_s": jit_rate, "python_configs_per_s": py_rate,
                      "speedup": jit_rate / py_rate}))


if __name__ == "__main__":
    main()
