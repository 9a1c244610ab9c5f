"""Generators shared by tests and benchmarks: random but plausible model, hardware and workload vectors for the
performance kernels, and random fleet problems for the MILP."""

from __future__ import annotations

import math

import numpy as np

from planner.fleet.finance import annual_rack_cost
from solvers.milp import FleetProblem
from solvers.perf import slots as L


def random_problem(seed: int, n_workloads: int, n_hardware: int, options_per_workload: int = 4,
                   disaggregated_share: float = 0.2, budget_share: float = 1.5, cap_share: float = 0.3,
                   objective: str = "min_cost") -> FleetProblem:
    """A random but plausible problem: rack systems of 1-72 chips and 15-150 kW, replicas of 1-72 chips whose
    throughput grows with their chips, demand log-uniform over 1e3-1e6 units; ``disaggregated_share`` of the
    columns use two hardware types; supply caps of 1-49 racks on ``cap_share`` of the types; the power budget is
    ``budget_share`` times the facility power of the fractional least-power fleet (0 or less: no budget)."""
    rng = np.random.default_rng(seed)
    H, W = n_hardware, n_workloads
    cpr = rng.choice([1, 4, 8, 16, 32, 64, 72], H).astype(float)
    chip_kw = rng.uniform(0.5, 2.0, H) * np.where(cpr == 1, 20.0, 1.5)
    power = np.minimum(cpr * chip_kw * 1e3, 150e3)
    capex = power * rng.uniform(20.0, 60.0, H)
    cost = annual_rack_cost(capex, power, 0.08, 4, 0.05, 70.0, 1.25)
    speed = rng.uniform(0.5, 2.0, H) * power / cpr  # demand units per chip
    demand = np.exp(rng.uniform(np.log(1e3), np.log(1e6), W))
    wl, caps, chips = [], [], []
    for w in range(W):
        for _ in range(options_per_workload):
            use = rng.choice(H, 2 if (H > 1 and rng.random() < disaggregated_share) else 1, replace=False)
            row = np.zeros(H)
            for h in use:
                row[h] = min(cpr[h], rng.choice([1, 2, 4, 8, 16, 32, 64, 72]))
            wl.append(w)
            chips.append(row)
            caps.append(float(row @ speed) * rng.uniform(0.3, 1.0) / len(use))
    chips = np.array(chips).reshape(-1, H)
    integer = (chips / cpr).max(axis=1) >= 0.25
    max_racks = np.where(rng.random(H) < cap_share, rng.integers(1, 50, H), np.inf)
    per_unit_power = np.array([(chips[j] / cpr) @ power / caps[j] for j in range(len(wl))])
    greedy_w = sum(demand[w] * per_unit_power[np.array(wl) == w].min() for w in range(W)) * 1.25
    budget = budget_share * greedy_w if budget_share > 0 else math.inf
    return FleetProblem(cpr, power, cost, max_racks, np.array(wl), np.array(caps), chips, integer, demand,
                        pue=1.25, power_budget_w=budget, objective=objective)


def random_model(rng):
    m = np.zeros(L.N_MODEL)
    layers = int(rng.integers(2, 100))
    moe = rng.random() < 0.5
    m[L.M_LAYERS] = layers
    m[L.M_MOE_LAYERS] = int(rng.integers(1, layers + 1)) if moe else 0
    m[L.M_DENSE_LAYERS] = layers - m[L.M_MOE_LAYERS]
    h = float(rng.choice([1024, 2880, 4096, 7168, 8192, 16384]))
    m[L.M_HIDDEN] = h
    m[L.M_ATTN_PARAMS] = 4 * h * h * rng.uniform(0.3, 1.2)
    m[L.M_DENSE_FFN_PARAMS] = 3 * h * h * rng.uniform(2, 5)
    if moe:
        m[L.M_EXPERTS] = float(rng.choice([8, 64, 128, 256, 384]))
        m[L.M_EXPERTS_PER_TOKEN] = float(rng.integers(1, 9))
        m[L.M_EXPERT_PARAMS] = 3 * h * rng.uniform(256, 4096)
        m[L.M_SHARED_PARAMS] = m[L.M_EXPERT_PARAMS] * rng.integers(0, 2) + h * m[L.M_EXPERTS]
    m[L.M_EMBED_PARAMS] = 2 * 128000 * h
    m[L.M_LM_HEAD_PARAMS] = 128000 * h
    m[L.M_KV_ELEMS] = float(rng.choice([576, 1024, 2048]))
    if rng.random() < 0.3:
        m[L.M_WINDOW_LAYERS] = int(rng.integers(1, layers + 1))
        m[L.M_WINDOW_TOKENS] = float(rng.choice([128, 4096]))
    m[L.M_ATTN_FLOPS] = 4 * 64 * 128
    m[L.M_PREFILL_ATTN_FLOPS] = 2 * 64 * 320
    m[L.M_KV_HEADS] = float(rng.choice([1, 4, 8, 64]))
    m[L.M_ATTN_KERNELS] = float(rng.integers(3, 13))
    m[L.M_DENSE_FFN_KERNELS] = float(rng.integers(2, 6))
    m[L.M_MOE_KERNELS] = float(rng.integers(6, 14)) if moe else 0.0
    m[L.M_SAMPLES] = float(rng.integers(0, 2))
    m[L.M_ATTN_HEADS] = float(rng.choice([8, 32, 64, 128]))
    return m


def random_model_of_kinds(rng):
    """``random_model`` with hybrid linear attention or DeepSeek sparse attention, or both (MODEL.md 2.10): some of
    its non-window layers keep a fixed state per stream, its full-attention layers read a top k of the cache and
    hold an indexer's keys."""
    m = random_model(rng)
    kind = int(rng.integers(0, 3))  # 0 linear, 1 sparse, 2 both
    if kind != 1:
        room = int(m[L.M_LAYERS] - m[L.M_WINDOW_LAYERS])
        m[L.M_LINEAR_LAYERS] = int(rng.integers(0, room + 1))
        m[L.M_STATE_BYTES] = float(rng.choice([32, 64])) * 128 * 128 * float(rng.choice([2, 4]))
        m[L.M_STATE_HEADS] = float(rng.choice([8, 16, 64]))
        m[L.M_LINEAR_FLOPS] = 7 * 32 * 128 * 128 * rng.uniform(0.5, 2)
    if kind != 0:
        m[L.M_TOPK] = float(rng.choice([64, 2048]))
        m[L.M_INDEX_ELEMS] = 128.0
        m[L.M_INDEX_FLOPS] = 2 * 64 * 128 + 2 * 64
    return m


def random_hw(rng):
    h = np.zeros(L.N_HW)
    tiers = int(rng.integers(1, 4))
    h[L.H_N_TIERS] = tiers
    h[L.H_SERVING_TIERS] = int(rng.integers(1, tiers + 1))  # capacity-only tiers after the serving ones
    cap, bw = 10 ** rng.uniform(8, 11), 10 ** rng.uniform(13, 15)
    for i in range(tiers):
        h[L.H_CAP + i] = cap
        h[L.H_BW + i] = bw
        cap *= 10 ** rng.uniform(0.5, 2)
        bw /= 10 ** rng.uniform(0.5, 2)
    h[L.H_PEAK_FLOPS] = 10 ** rng.uniform(14, 16.5)
    h[L.H_ATTN_PEAK_FLOPS] = h[L.H_PEAK_FLOPS] / float(rng.choice([1, 2]))
    h[L.H_WEIGHT_BYTES] = float(rng.choice([0.5625, 1.0, 2.0]))
    h[L.H_KV_BYTES] = float(rng.choice([1.0, 2.0]))
    h[L.H_ACT_BYTES] = 2.0
    h[L.H_SU_DOMAIN] = float(rng.choice([1, 8, 72, 256]))
    h[L.H_SU_BW] = 10 ** rng.uniform(10, 12.5)
    h[L.H_SU_LAT] = 10 ** rng.uniform(-7, -5)
    h[L.H_SO_BW] = 10 ** rng.uniform(9.5, 11)
    h[L.H_SO_LAT] = 10 ** rng.uniform(-6, -4)
    h[L.H_CHIPS_PER_RACK] = float(rng.choice([1, 8, 72, 256]))
    h[L.H_RACK_POWER_W] = 10 ** rng.uniform(3, 5.5)
    h[L.H_BW_EFF] = rng.uniform(0.3, 1)
    h[L.H_FLOPS_EFF] = rng.uniform(0.2, 1)
    h[L.H_KERNEL_S] = 10 ** rng.uniform(-8, -5)
    h[L.H_PREFILL_KERNEL_S] = h[L.H_KERNEL_S] * rng.uniform(1.0, 4.0)
    h[L.H_STEP_S] = 10 ** rng.uniform(-6, -3)
    h[L.H_COLL_LAT_S] = 10 ** rng.uniform(-7, -4)
    h[L.H_MEM_USABLE] = rng.uniform(0.7, 1)
    h[L.H_ATTN_STREAM_S] = float(rng.choice([0.0, 10 ** rng.uniform(-8, -6)]))
    h[L.H_EXP_PER_S] = float(rng.choice([0.0, 10 ** rng.uniform(12, 13.5)]))
    h[L.H_SPEC_STREAM_S] = float(rng.choice([0.0, 10 ** rng.uniform(-6, -4)]))
    h[L.H_MAX_STREAMS_PER_RANK] = float(rng.choice([np.inf, rng.uniform(16, 4096)]))
    h[L.H_PREFILL_TOKENS_PER_PASS] = float(rng.choice([0.0, rng.uniform(512, 16384)]))
    h[L.H_GROUPED_GEMM_FACTOR] = float(rng.choice([1.0, rng.uniform(0.2, 1.0)]))
    h[L.H_IDLE_POWER_SHARE] = float(rng.choice([1.0, rng.uniform(0.1, 0.9)]))
    h[L.H_MEMORY_POWER_SHARE] = rng.uniform(0.0, 0.9)
    h[L.H_COMPUTE_POWER_SHARE] = rng.uniform(0.0, 0.9)
    return h


def random_config(rng, m):
    tp = float(rng.choice([1, 2, 4, 8, 16, 64]))  # 16 and 64 span 8-chip domains (wide expert parallelism)
    pp = float(rng.integers(1, int(m[L.M_LAYERS]) + 1))
    ep = float(rng.integers(0, 2))
    return tp, pp, ep


def random_workload(rng, colocated: bool = False, agentic: bool = False):
    """A workload vector (slots W_*): lengths, a tier, and for colocated serving a TTFT target."""
    wl = np.zeros(L.N_WORKLOAD)
    inp, out = float(rng.integers(50, 20000)), float(rng.integers(20, 4000))
    wl[L.W_INPUT_TOKENS] = inp
    wl[L.W_PREFILL_TOKENS] = inp * rng.uniform(0.2, 1.0)
    wl[L.W_OUTPUT_TOKENS] = out
    wl[L.W_CONTEXT_AVG] = inp + out / 2
    wl[L.W_CONTEXT_MAX] = inp + out
    wl[L.W_MIN_TPS_PER_USER] = 10 ** rng.uniform(0, 2.5)
    wl[L.W_TTFT_S] = 10 ** rng.uniform(-1, 1.5) if colocated else np.inf
    wl[L.W_TTFT_QUANTILE] = float(rng.choice([0.5, 0.9, 0.99]))
    wl[L.W_RESIDENT_S_PER_TOKEN] = 10 ** rng.uniform(-3, 0) if agentic else 0.0
    return wl


SMALL_SITE_MODELS = ("llama-3.1-8b", "llama-3.1-70b", "gpt-oss-120b")
SMALL_SITE_HARDWARE = ("hgx-h100", "hgx-h200", "hgx-b200")
SMALL_SITE_TIERS = ("standard", "high", "premium")


def random_small_site(seed: int) -> str:
    """A random small site as scenario YAML: one air-cooled 8-GPU system, one or two workloads of 2-40 requests/s
    on a model of SMALL_SITE_MODELS, fixed or spread ({mean, p99}) prompt and answer lengths, a tier, a TTFT target
    of 1-5 s at p90 or p99: pools of a few replicas, where sizing at a percentile matters most."""
    rng = np.random.default_rng(seed)
    hardware = SMALL_SITE_HARDWARE[rng.integers(len(SMALL_SITE_HARDWARE))]
    lines = []
    for k in range(int(rng.integers(1, 3))):
        model = SMALL_SITE_MODELS[rng.integers(len(SMALL_SITE_MODELS))]
        rate = float(np.round(rng.uniform(2, 40), 1))
        prompt, answer = int(rng.choice([500, 1500, 4000])), int(rng.choice([150, 400, 900]))
        spread = rng.random() < 0.5
        prompt_s = f"{{mean: {prompt}, p99: {prompt * 5}}}" if spread else str(prompt)
        answer_s = f"{{mean: {answer}, p99: {answer * 4}}}" if spread else str(answer)
        tier = SMALL_SITE_TIERS[rng.integers(len(SMALL_SITE_TIERS))]
        lines.append(f"  - {{name: w{k}, model: {model}, requests_per_s: {rate}, input_tokens: {prompt_s}, "
                     f"output_tokens: {answer_s}, tier: {tier}, ttft_s: {float(rng.choice([1.0, 2.0, 5.0]))}, "
                     f"ttft_percentile: {int(rng.choice([90, 99]))}}}")
    return (f"name: small-site-{seed}\nstart_date: 2027-01-01\nhorizon_years: 4\n"
            f"finance: {{wacc: 0.08, electricity_usd_per_mwh: 70, pue: 1.2}}\nhardware: {{allow: [{hardware}]}}\n"
            "workloads:\n" + "\n".join(lines) + "\n")


# issue 44: sites as a cloud or a lab plans them, over the catalog's ten current models, every merchant system allowed
SCALE_MODELS = ("llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "qwen3-32b", "qwen3-235b-a22b", "gpt-oss-20b",
                "gpt-oss-120b", "deepseek-r1", "deepseek-v3", "kimi-k2")
# (kind, input tokens, output tokens, prefix cache hit, TTFT s): a chat turn, and an agent's step over a long context
SCALE_KINDS = (("chat", (400, 3000), (150, 800), 0.2, 1.0), ("agent", (8000, 60000), (300, 2000), 0.7, 3.0))
SCALE_TIERS = ("standard", "standard", "high", "high", "premium")
# The fastest tier the catalog reaches on a model where it is below premium: no system serves the dense 405B at 400
# tok/s per user (the planner says so, exit 3), and a site of 100 workloads would almost never be feasible
SCALE_FASTEST = {"llama-3.1-405b": "high"}


def scale_scenario(n_workloads: int, seed: int = 0, power_mw: float = 5000.0) -> dict:
    """One site of ``power_mw`` facility MW (demand, not power, shapes the plan) serving ``n_workloads`` chat and
    agentic workloads at 3-1,000 requests/s on SCALE_MODELS and SCALE_TIERS (at most a model's SCALE_FASTEST), every
    merchant system allowed; seeded."""
    rng = np.random.default_rng(seed)
    workloads = []
    for i in range(n_workloads):
        kind, inputs, outputs, hit, ttft = SCALE_KINDS[int(rng.integers(len(SCALE_KINDS)))]
        model = SCALE_MODELS[int(rng.integers(len(SCALE_MODELS)))]
        w = {"name": f"w{i:03d}-{kind}", "model": model, "requests_per_s": float(round(10 ** rng.uniform(0.5, 3.0), 1)),
             "input_tokens": int(rng.integers(*inputs)), "output_tokens": int(rng.integers(*outputs)),
             "tier": SCALE_TIERS[int(rng.integers(len(SCALE_TIERS)))], "ttft_s": ttft, "prefix_cache_hit": hit}
        fastest = SCALE_FASTEST.get(model)
        if fastest and SCALE_TIERS.index(w["tier"]) > SCALE_TIERS.index(fastest):
            w["tier"] = fastest
        workloads.append(w)
    return {"name": f"scale-{n_workloads}w-s{seed}", "start_date": "2026-12-01", "horizon_years": 4,
            "finance": {"wacc": 0.08, "electricity_usd_per_mwh": 70.0, "pue": 1.25},
            "site": {"power_budget_mw": power_mw}, "workloads": workloads}


def scale_sites(data: dict, n_sites: int, seed: int = 0) -> dict:
    """``scale_scenario``'s site split into ``n_sites`` sites (docs/OPTIMIZER.md 21): its power shared evenly, each
    site its own electricity price (40-140 USD/MWh) and PUE (1.1-1.5), and each workload allowed at one to all of
    them (a third of the workloads pinned to one: data residence); seeded. One site: the data unchanged."""
    if n_sites <= 1:
        return data
    rng = np.random.default_rng(1000 + seed)
    power = float(data["site"]["power_budget_mw"])
    out = {k: v for k, v in data.items() if k != "site"}
    out["name"] = f"{data['name']}-{n_sites}sites"
    out["sites"] = [{"name": f"site{s}", "power_budget_mw": power / n_sites,
                     "electricity_usd_per_mwh": float(round(rng.uniform(40.0, 140.0), 1)),
                     "pue": float(round(rng.uniform(1.1, 1.5), 2))} for s in range(n_sites)]
    names = [e["name"] for e in out["sites"]]
    workloads = []
    for w in data["workloads"]:
        w = dict(w)
        if rng.random() < 1 / 3:
            w["sites"] = [names[int(rng.integers(n_sites))]]
        elif rng.random() < 0.5:
            w["sites"] = sorted(rng.choice(names, int(rng.integers(1, n_sites + 1)), replace=False).tolist())
        workloads.append(w)
    out["workloads"] = workloads
    return out


def scale_buildout(data: dict, n_periods: int, n_scenarios: int = 1, seed: int = 0) -> dict:
    """``scale_scenario``'s site as a build-out (docs/OPTIMIZER.md 7): ``n_periods`` yearly periods from its start,
    each workload's rate multiplied by 1.2-2.0 a year (its ``growth_per_year``), and ``n_scenarios`` demand forecasts (multipliers spread over 0.6-1.6,
    probabilities equal) after the first period; seeded."""
    import datetime as dt

    rng = np.random.default_rng(2000 + seed)
    start = dt.date.fromisoformat(data["start_date"])
    out = {k: v for k, v in data.items()}
    out["name"] = f"{data['name']}-{n_periods}p{n_scenarios}s"
    out["periods"] = [dt.date(start.year + t, start.month, start.day).isoformat() for t in range(n_periods)]
    out["horizon_years"] = max(float(data["horizon_years"]), float(n_periods + 1))
    out["workloads"] = [{**w, "growth_per_year": float(round(rng.uniform(1.2, 2.0), 2))} for w in data["workloads"]]
    if n_scenarios > 1:
        out["demand_scenarios"] = [{"name": f"d{k}", "probability": 1.0 / n_scenarios,
                                    "multiplier": float(round(0.6 + k / (n_scenarios - 1), 3))}
                                   for k in range(n_scenarios)]
    return out
