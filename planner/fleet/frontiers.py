"""The frontiers the HTML report draws beside a plan (``planner.orchestration`` decides when they are computed): each
model's Pareto frontier over the plan's systems (``planner.perf.frontier``) and the plan's own operating points on its
axes."""

from __future__ import annotations

import polars as pl

from planner.errors import PlannerError
from planner.perf.estimate import parse_pair
from planner.perf.frontier import frontier
from planner.vocabulary import DECODE_ROLES


def chosen_points(plan) -> list[dict]:
    """The plan's operating point for each workload, on the frontier's own axes: the workload's speed per user
    (its slowest decode allocation) and its output tokens/s per MW of rack power counting all the power it uses,
    prefill included (planner.perf.frontier counts prefill too, so the two are comparable). ``hardware``
    is the system that decodes most of its tokens; ``draft_tokens`` the most speculative decode it uses (the
    frontier sweeps plain decoding, so a speculative operating point can sit above its curve)."""
    if plan is None or plan.workloads is None or not len(plan.workloads) or plan.allocation is None:
        return []
    out = []
    for w in plan.workloads.iter_rows(named=True):
        if not w.get("tps_per_user") or not w.get("output_tokens_per_s_per_mw"):
            continue
        dec = plan.allocation.filter((pl.col("workload") == w["workload"]) & pl.col("role").is_in(DECODE_ROLES))
        hardware, draft = None, 0
        if len(dec):
            by_hw = dec.group_by("hardware").agg(pl.col("output_tokens_per_s").sum()).sort(
                ["output_tokens_per_s", "hardware"], descending=[True, False])
            hardware = by_hw["hardware"][0]
            draft = int(dec["draft_tokens"].max() or 0)
        out.append({"workload": w["workload"], "model": w["model"], "hardware": hardware,
                    "tps_per_user": float(w["tps_per_user"]),
                    "output_tokens_per_s_per_mw": float(w["output_tokens_per_s_per_mw"]),
                    "draft_tokens": draft, "label": w["workload"]})
    return out


def frontier_points_for_plan(plan) -> dict[str, dict]:
    """model -> {"points": frontier points, "chosen": the plan's operating points on that model}, over the
    single-system hardware in the plan's fleet (the scenario's hardware when the fleet is empty); hardware that
    cannot decode the model is skipped. Prompt and output lengths are those of the model's first workload."""
    if plan is None or plan.built is None:
        return {}
    built = plan.built
    if plan.fleet is not None and len(plan.fleet):
        hw_ids = [h for h in plan.fleet["hardware"].to_list()]
    else:
        hw_ids = [h.id for h in built.hardware]
    hw_ids = [h for h in hw_ids if parse_pair(h)[1] is None]
    chosen = chosen_points(plan)
    out: dict[str, dict] = {}
    for d in built.demands:
        if d.model in out:
            continue
        precisions = {x.precision for x in built.demands if x.model == d.model}
        precision = precisions.pop() if len(precisions) == 1 else None
        points: list[dict] = []
        for hw in hw_ids:
            try:
                points.extend(frontier(d.model, [hw], precision, max(1, int(round(d.input_tokens))),
                                                   max(1, int(round(d.output_tokens)))))
            except (PlannerError, ValueError, KeyError):
                continue  # this system cannot decode this model (prefill-only, model lock, no fit, no precision)
        out[d.model] = {"points": points, "chosen": [c for c in chosen if c["model"] == d.model],
                        "input_tokens": d.input_tokens, "output_tokens": d.output_tokens, "precision": precision}
    return out


# ---- writing --------------------------------------------------------------------------------------------------------
