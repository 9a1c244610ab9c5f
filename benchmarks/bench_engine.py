"""Candidates scored per second: the jitted engine, a numpy-vectorized version of the same math, and pure Python.

    python benchmarks/bench_engine.py [--quick]

All three score the same candidates (DeepSeek-R1 on GB200 NVL72 at FP4: every tensor x pipeline x expert layout,
speculative decoding off and with 3 MTP draft tokens, the drafter costed, a grid of batches) and pick, per layout, the best batch that reaches 100 tok/s
per user. Pure Python runs on a slice and is timed per candidate. The last line printed is JSON with
``candidates_per_s``, ``numpy_candidates_per_s``, ``python_candidates_per_s`` and the ratios.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from planner import catalog
from planner.perf.grid import parallel_grid
from planner.perf.pack import hardware_vector, model_vector, workload_vector
from planner.perf.speculative import Speculation, draft_vector
from solvers.perf import slots as L
from solvers.perf import sweep as E
from solvers.perf import twin as reference

MIN_TPS = 100.0
CTX_AVG, CTX_MAX = 3000.0, 4000.0


def setup(n_batches: int, repeat: int):
    model, hw = catalog.get_model("deepseek-r1"), catalog.get_hardware("gb200-nvl72")
    mv, hv = model_vector(model), hardware_vector(hw, "fp4")
    grid = np.tile(parallel_grid(hw, model), (repeat, 1))
    batches = np.unique(np.round(np.geomspace(1, 8192, n_batches))).astype(np.float64)
    k, a = np.array([0.0, 3.0]), np.array([1.0, 2.53])  # draft tokens per step, accepted tokens
    global DRAFT
    DRAFT = draft_vector(model, Speculation("mtp", 3, 0.7))
    return mv, hv, grid, batches, k, a


DRAFT = None  # the MTP drafter of DeepSeek-R1 (set by setup)


def run_jit(mv, hv, grid, batches, k, a):
    pps = np.unique(grid[:, 1])
    touched = E.touched_experts_table(mv, pps, batches, k + 1.0)
    draft_touched = E.touched_experts_table(DRAFT, pps, batches, np.ones(1))
    n = len(grid)
    # 2,000 in and 2,000 out: the mean context CTX_AVG and the longest CTX_MAX the references price
    wl = workload_vector(2000.0, 2000.0, min_tps_per_user=MIN_TPS)
    return E.best_decode_per_layout(mv, DRAFT, hv, wl, grid, np.searchsorted(pps, grid[:, 1]), touched, draft_touched,
                                    batches, k, a, np.full(n, np.inf), np.zeros(n))


def numpy_coefficients(mv, hv, grid, k):
    """Per-layout coefficients (the target's, and the drafter's at pipeline depth 1) for the numpy path, computed
    once and not timed (numpy is only asked to do the part that scales with candidates, which flatters it)."""
    coef = np.empty((2, len(grid), L.N_COEF))
    for i, (tp, pp, ep) in enumerate(grid):
        E.layout_coefficients(mv, hv, tp, pp, ep, CTX_AVG, CTX_MAX, coef[0, i])
        E.layout_coefficients(DRAFT, hv, tp, 1.0, ep, CTX_AVG, CTX_MAX, coef[1, i])
    return coef


def numpy_step(hv, c, touched, tokens, b, held_kv):
    """One pipeline stage's step over (layouts x batches), as ``sweep.decode_intervals`` and ``draft_steps``:
    each kernel group's roofline (the weights split over tp, data-parallel attention's replicated weights, the
    routed experts at the busiest expert group under expert parallelism, attention), reads spilling past the
    fastest tier where they do not fit, the fixed, per-token and per-stream costs."""
    r, e, k = c["C_GROUPS"], c["C_EXPERTS"], c["C_EXPERTS_PER_TOKEN"]
    grouped = r > 1.0
    p = (r - 0.375) / (r + 0.25)
    z = np.where(grouped, 4.91 * (np.abs(p) ** 0.14 - np.abs(1.0 - p) ** 0.14), 0.0)
    z2, inv_r, per_group = z * z, 1.0 / r, e / r
    inv_e = np.where(e > 0, 1.0 / np.maximum(e, 1e-300), 0.0)
    m = touched * inv_r
    busy_touched = busiest_of(np.minimum(per_group, touched), m + np.sqrt(np.maximum(z2 * m * (1.0 - touched * inv_e), 0.0)))
    assigned = tokens * k
    mu = assigned * inv_r
    rows = busiest_of(assigned, mu + np.sqrt(np.maximum(z2 * mu * (1.0 - inv_r), 0.0)))
    read_e = np.where(grouped, c["C_READ_W1"] * r * busy_touched, c["C_READ_W1"] * touched)
    rows_e = np.where(grouped, r * rows, assigned)
    a_w = np.full(np.broadcast_shapes(np.shape(tokens), np.shape(held_kv)), 1.0 / (hv[L.H_BW] * hv[L.H_BW_EFF]))
    a_kv = a_w.copy()
    spills = c["C_HELD_W"] + held_kv > hv[L.H_CAP] * hv[L.H_MEM_USABLE]
    if spills.any():
        tiered_w, tiered_kv = numpy_tier_coefficients(hv, c["C_HELD_W"], held_kv)
        a_w, a_kv = np.where(spills, tiered_w, a_w), np.where(spills, tiered_kv, a_kv)
    t = np.maximum(c["C_READ_W0"] * a_w, c["C_COMPUTE"] * tokens)
    t = t + np.maximum(c["C_ATTW_READ"] * a_w, c["C_ATTW_COMPUTE"] * tokens)
    t = t + np.maximum(read_e * a_w, c["C_EXPERT_COMPUTE"] * rows_e)
    t = t + np.maximum(c["C_KV_READ"] * b * a_kv, c["C_ATT_COMPUTE"] * tokens)
    return t + c["C_COMM0"] + c["C_FLOOR"] + c["C_COMM1"] * tokens + c["C_STREAM_S"] * b


def busiest_of(cap, estimate):
    return np.minimum(cap, np.maximum(estimate, np.minimum(1.0, cap)))


def numpy_touched(model, pp, batches, query_tokens):
    """Distinct experts touched per MoE layer at each (layout's depth, batch), as ``sweep.touched_experts_table``."""
    e, k = model[L.M_EXPERTS], model[L.M_EXPERTS_PER_TOKEN]
    tokens = np.maximum(batches[None, :] / pp, 1.0) * query_tokens
    return e * (1.0 - (1.0 - k / e) ** tokens) if e > 0 else np.zeros_like(tokens)


def run_numpy(coef, mv, hv, grid, batches, k, a):
    """The engine's batch scoring as whole-array numpy over (layouts x batches), per speculative setting: the same
    intervals, drafting, memory fit, tier and scheduler bound as ``sweep.best_batch_of_intervals``."""
    best = np.zeros((len(grid) * len(k), 2))
    c = {name: coef[0][:, getattr(L, name)][:, None] for name in dir(L) if name.startswith("C_")}
    dc = {name: coef[1][:, getattr(L, name)][:, None] for name in dir(L) if name.startswith("C_")}
    pp = c["C_PP"]
    b = np.maximum(batches[None, :] / pp, 1.0)
    streams = batches[None, :]
    draft_step = None
    for j in range(len(k)):
        q = k[j] + 1.0
        interval = pp * numpy_step(hv, c, numpy_touched(mv, pp, batches, q), b * q, b, c["C_KV_HELD"] * streams)
        held_w, kv_per_stream = c["C_HELD_W"], c["C_KV_HELD"]
        if k[j] > 0:
            if draft_step is None:  # the drafter's step does not depend on the draft length
                draft_step = numpy_step(hv, dc, numpy_touched(DRAFT, pp, batches, 1.0), b, b, dc["C_KV_HELD"] * b)
            interval = interval + pp * (k[j] * draft_step + b * hv[L.H_SPEC_STREAM_S])
            held_w, kv_per_stream = held_w + dc["C_HELD_W"], kv_per_stream + dc["C_KV_HELD"]
        served = streams * a[j] / interval
        ok = (held_w + kv_per_stream * streams <= c["C_USABLE"]) & (served / streams >= MIN_TPS)
        ok &= streams <= c["C_STREAM_CAP"]
        tput = np.where(ok, served, 0.0)
        pick = np.argmax(tput, axis=1)
        best[j::len(k), 0] = tput[np.arange(len(grid)), pick]
        best[j::len(k), 1] = batches[pick]
    return best


def numpy_tier_coefficients(hw, held_w, held_kv):
    """Seconds per weight byte and per KV byte read, as ``kernels.tier_coefficients``, over arrays."""
    usable = hw[L.H_MEM_USABLE]
    shape = np.broadcast_shapes(np.shape(held_w), np.shape(held_kv))
    w_left = np.broadcast_to(held_w, shape).astype(float).copy()
    kv_left = np.broadcast_to(held_kv, shape).astype(float).copy()
    inv_w = np.where(held_w > 0, 1.0 / np.maximum(held_w, 1e-300), 0.0)
    inv_kv = np.where(held_kv > 0, 1.0 / np.maximum(held_kv, 1e-300), 0.0)
    a_w, a_kv = np.zeros(shape), np.zeros(shape)
    n = int(hw[L.H_N_TIERS])
    for i in range(n):
        room = hw[L.H_CAP + i] * usable
        w_here = np.minimum(w_left, room)
        w_left -= w_here
        kv_here = np.minimum(kv_left, room - w_here)
        kv_left -= kv_here
        speed = hw[L.H_BW + i] * hw[L.H_BW_EFF]
        a_w += w_here * inv_w / speed
        a_kv += kv_here * inv_kv / speed
    last = hw[L.H_BW + n - 1] * hw[L.H_BW_EFF]
    return a_w + w_left * inv_w / last, a_kv + kv_left * inv_kv / last


def run_python(mv, hv, grid, batches, k, a):
    """Pure Python: the plain-Python twin of the model, one candidate at a time."""
    out = []
    for tp, pp, ep in grid:
        for kj, aj in zip(k, a):
            best = (0.0, batches[0])
            for bt in batches:
                r = reference.speculative_decode(mv, DRAFT, hv, tp, pp, ep, bt, CTX_AVG, CTX_MAX, kj, aj)
                if r["fits"] and r["tps_per_user"] >= MIN_TPS and r["tokens_per_s"] > best[0]:
                    best = (r["tokens_per_s"], bt)
            out.append(best)
    return np.array(out)


def timed(fn, *args, repeats=3):
    best, result = np.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn(*args)
        best = min(best, time.perf_counter() - t0)
    return best, result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller problem (CI-sized)")
    args = ap.parse_args()
    n_batches, repeat, py_layouts = (160, 8, 6) if args.quick else (160, 40, 12)
    mv, hv, grid, batches, q, a = setup(n_batches, repeat)
    n = len(grid) * len(q) * len(batches)
    run_jit(mv, hv, grid[:4], batches, q, a)  # compile or load the cache
    jit_s, jit = timed(run_jit, mv, hv, grid, batches, q, a)
    coef = numpy_coefficients(mv, hv, grid, q)
    np_s, npy = timed(run_numpy, coef, mv, hv, grid, batches, q, a)
    sub = grid[:py_layouts]
    py_n = len(sub) * len(q) * len(batches)
    py_s, py = timed(run_python, mv, hv, sub, batches, q, a, repeats=1)
    agree_np = np.allclose(jit[:, 0], npy[:, 0], rtol=1e-9)
    agree_py = np.allclose(jit[: len(py), 0], py[:, 0], rtol=1e-9)
    rates = {"candidates_per_s": n / jit_s, "numpy_candidates_per_s": n / np_s, "python_candidates_per_s": py_n / py_s}
    print(f"candidates: {n:,} (layouts {len(grid):,} x speculative {len(q)} x batches {len(batches)})")
    print(f"jit    {jit_s:8.3f} s  {rates['candidates_per_s']:>16,.0f} /s")
    print(f"numpy  {np_s:8.3f} s  {rates['numpy_candidates_per_s']:>16,.0f} /s   agrees: {agree_np}")
    print(f"python {py_s:8.3f} s  {rates['python_candidates_per_s']:>16,.0f} /s   ({py_n:,} candidates) agrees: {agree_py}")
    rates["jit_over_numpy"] = rates["candidates_per_s"] / rates["numpy_candidates_per_s"]
    rates["jit_over_python"] = rates["candidates_per_s"] / rates["python_candidates_per_s"]
    rates["agree"] = bool(agree_np and agree_py)
    print(json.dumps(rates))


if __name__ == "__main__":
    main()
