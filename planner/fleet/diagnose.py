"""Why no fleet exists, and the smallest change that would give one: workloads no system serves (the fastest
reachable speed, the shortest TTFT, or no fit at all), else the power the demand needs against the budget, else
the rack limits that bind (relaxations of the same MILP)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from planner import catalog
from planner.fleet.options import DECODE_KINDS, PREFILL_KINDS
from planner.fleet.problem import Built, scenario_options
from solvers.milp import evaluate, new_racks, optimize
from solvers.vocabulary import HAS_PLAN


def infeasibility_message(built: Built) -> str:
    """Why no fleet exists: workloads with no option at all, else the least power the demand needs against the
    budget (the same MILP minimising power with no budget), else the rack limits."""
    if built.unserved:
        return "no feasible fleet: " + "; ".join(f"{w}: {why}" for w, why in what_would_serve(built).items())
    p = built.problem
    queued_out = unusable_queues(built)
    if queued_out:
        return "no feasible fleet: " + "; ".join(queued_out)
    if p.n_sites > 1:
        found = sites_message(built)
        if found is not None:
            return found
    relaxed = dataclasses.replace(p, power_budget_w=math.inf, objective="min_power")
    least = optimize(relaxed, solver="highs", time_limit_s=30.0, relative_gap=1e-3, fewest_platforms=False)
    if least.status in HAS_PLAN:
        need_mw = least.objective * p.pue / 1e6
        return (f"no feasible fleet: serving every workload at its tier needs at least {need_mw:.4g} MW of facility "
                f"power (the least-power fleet), but the site's budget is {p.power_budget_w / 1e6:.4g} MW: short by "
                f"{need_mw - p.power_budget_w / 1e6:.4g} MW (the smallest change: raise the budget or lower demand); "
                f"of it, the replicas of each workload draw " + ", ".join(
                    f"{w} {mw:.3g} MW" for w, mw in workload_power_mw(built, least.replicas, p.pue).items()))
    free = dataclasses.replace(relaxed, max_racks=np.full(p.n_hardware, math.inf), max_total_racks=math.inf,
                               max_new_racks=math.inf)
    needed = optimize(free, solver="highs", time_limit_s=30.0, relative_gap=1e-3, fewest_platforms=False)
    if needed.status in HAS_PLAN:
        bought = new_racks(p, needed.racks)
        over = [f"{h.id}: {int(n)} racks needed, cap {int(c)}" for h, n, c in
                zip(built.hardware, bought, p.max_racks) if n > c]
        if bought.sum() > p.max_new_racks:
            have = ", ".join(f"{int(n)} {h.id}" for h, n in zip(built.hardware, p.installed_racks) if n)
            over.append(f"new racks: {int(bought.sum())} needed beyond the installed fleet ({have or 'none'}), "
                        f"hardware.max_new_racks {int(p.max_new_racks)}")
        total = int(np.sum(needed.racks))
        if total > p.max_total_racks:
            over.append(f"all systems: {total} racks needed, site max_racks {int(p.max_total_racks)}")
        return ("no feasible fleet: the rack limits bind even with unlimited power; the least-power fleet needs "
                + "; ".join(over))
    return "no feasible fleet: no combination of the options covers the demand"



def sites_message(built: Built) -> str | None:
    """Several sites (OPTIMIZER.md 21): the sites whose own budget and floor space cannot hold what they must (each
    site's limits alone kept, the others lifted), else the power the demand needs over the sites against their
    budgets; None where even without the sites' limits no plan exists (the rack caps then say why)."""
    p = built.problem
    names = list(built.site_views or {})
    unlimited = np.full(p.n_sites, math.inf)
    free = dataclasses.replace(p, site_power_budget_w=unlimited, site_max_racks=unlimited, objective="min_power")
    least = optimize(free, solver="highs", time_limit_s=30.0, relative_gap=1e-3, fewest_platforms=False)
    if least.status not in HAS_PLAN:
        return None
    short = []
    for s, name in enumerate(names):
        budget, most = float(p.site_budgets_w[s]), float(p.site_rack_limits[s])
        if math.isinf(budget) and math.isinf(most):
            continue
        alone = dataclasses.replace(free, site_power_budget_w=np.where(np.arange(p.n_sites) == s, budget, math.inf),
                                    site_max_racks=np.where(np.arange(p.n_sites) == s, most, math.inf))
        if optimize(alone, solver="highs", time_limit_s=30.0, relative_gap=1e-3,
                    fewest_platforms=False).status not in HAS_PLAN:
            only = [w.name for w in built.scenario.workloads if w.sites == [name]]
            limits = " and ".join(x for x in (f"{budget / 1e6:.4g} MW" if math.isfinite(budget) else "",
                                              f"{most:g} racks" if math.isfinite(most) else "") if x)
            short.append(f"site {name}: its {limits} cannot hold what only it may serve"
                         + (f" ({', '.join(only)})" if only else "") + f" (raise sites.{name}'s limits, or let "
                         f"those workloads' sites include another)")
    if short:
        return "no feasible fleet: " + "; ".join(short)
    need = float(evaluate(p, least.racks, least.replicas).site_facility_power_w.sum()) / 1e6
    budgets = float(np.sum(p.site_budgets_w)) / 1e6
    return (f"no feasible fleet: each site holds what only it may serve, but not everything together: the "
            f"least-power fleet needs {need:.4g} MW of facility power over the sites against {budgets:.4g} MW of "
            f"budgets (where each workload may go: raise a site's budget, let more workloads move, or lower demand)")


def unusable_queues(built: Built) -> list[str]:
    """Workloads with options whose queues of batch slots leave none of their capacity usable at the workload's
    percentile (docs/OPTIMIZER.md 18), and no option that covers their demand otherwise."""
    out = []
    for w, d in enumerate(built.demands):
        for row, what in ((2 * w, "decode"), (2 * w + 1, "prefill")):
            if d.output_tokens_per_s > 0 and not np.any(built.problem.coverage[:, row] > 0):
                out.append(f"{d.name}: none of its {what} options has capacity usable at p{100 * d.ttft_quantile:g}: "
                           f"a stream waiting for a batch slot would miss the {d.min_tps_per_user:g} tok/s tier or "
                           f"the {d.ttft_s:g} s TTFT (docs/OPTIMIZER.md 18); a lower percentile or a looser target "
                           f"leaves room to wait")
                break
    return out


def workload_power_mw(built: Built, replicas: np.ndarray, pue: float) -> dict[str, float]:
    """Facility MW each workload's replicas draw in a solution (largest first): what to cut where a budget binds
    (whole racks add the rest)."""
    cols = built.options
    out: dict[str, float] = {}
    for j in np.flatnonzero(np.asarray(replicas) > 1e-12):
        w = str(cols["workload"][j])
        out[w] = out.get(w, 0.0) + float(replicas[j]) * float(cols["power_w"][j]) * pue / 1e6
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def fastest_reachable(loose, sc, hardware, asked: float) -> tuple[float, str]:
    """The highest per-user speed (within 5%) that some option reaches, by bisection on the tier the engine asks
    for (speculative decoding included, as in solve), and the system that reaches it."""
    lo, hi, where = 0.0, asked, ""
    for _ in range(12):
        mid = (lo + hi) / 2 if lo > 0 else hi / 32
        opts = scenario_options(sc, [dataclasses.replace(loose, min_tps_per_user=mid)], hardware).arrays()
        found = np.isin(opts["kind"], DECODE_KINDS)
        if found.any():
            i = int(np.argmax(np.where(found, opts["tps_per_user"], -1.0)))
            lo, where = max(mid, float(opts["tps_per_user"][i])), str(opts["hardware"][i])
        else:
            hi = mid
        if lo > 0 and hi / lo < 1.05:
            break
    return lo, where



def why_not_systems(d, hardware: dict) -> list[str]:
    """What bars each allowed system from a workload before any memory fit: a model wired into it, or no role
    that decodes, or the workload's pinned precision."""
    reasons = []
    for hw_id, hw in hardware.items():
        if d.allow_hardware is not None and hw_id not in d.allow_hardware:
            continue
        if hw.model_lock and hw.model_lock != d.model:
            reasons.append(f"{hw_id} serves only {hw.model_lock}")
        elif "decode" not in hw.roles and "ffn" not in hw.roles:
            reasons.append(f"{hw_id} does not decode (roles: {', '.join(hw.roles)})")
        elif d.precision is not None and not catalog.runs_precision(hw, catalog.get_model(d.model), d.precision):
            reasons.append(f"{hw_id} does not run {d.precision}")
    return reasons


def what_would_serve(built: Built) -> dict[str, str]:
    """For each workload without options, why, and the smallest change that would give it one: the best speed any
    allowed system reaches (lower the tier to it), or the shortest TTFT (raise the target to it), or that the
    model fits no allowed system at all."""
    sc = built.scenario
    hardware = {h.id: h for h in built.hardware}  # each system once (at several sites, its types share it)
    out = {}
    for d in built.demands:
        if d.name not in built.unserved:
            continue
        loose = dataclasses.replace(d, min_tps_per_user=1e-9, ttft_s=1e9)
        opts = scenario_options(sc, [loose], hardware).arrays()
        decode = np.isin(opts["kind"], DECODE_KINDS)
        prefill = np.isin(opts["kind"], PREFILL_KINDS)
        if not decode.any():
            out[d.name] = f"{d.model} with a {d.context_max:g}-token context fits no allowed system"
            barred = why_not_systems(d, hardware)
            if barred:
                out[d.name] += f" ({'; '.join(barred)})"
        elif "reaches" in built.unserved[d.name]:
            speed, where = fastest_reachable(loose, sc, hardware, d.min_tps_per_user)
            out[d.name] = (f"{built.unserved[d.name]}; the fastest reachable is about {speed:.3g} tok/s per user "
                           f"on {where} (smallest change: a tier at or below that speed)")
        elif prefill.any():
            fastest = float(np.nanmin(np.where(prefill, opts["ttft_fixed_s"], np.nan)))
            out[d.name] = (f"{built.unserved[d.name]}; an idle replica needs {fastest:.3g} s "
                           f"(smallest change: a TTFT target above that)")
        else:
            out[d.name] = built.unserved[d.name]
    return out
