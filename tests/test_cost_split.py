"""The cost per token split into input, cached input and output (issue 23 item 4): prefill and decode cost
attributed by the resources each uses, and the pieces adding up to the blended figure."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.fleet.check import check
from planner.vocabulary import SECONDS_PER_YEAR
from tests.shipped import shipped_plan

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module", params=["bank-2mw", "agentic-coding-ultra"])
def plan(request):
    return shipped_plan(request.param).to_dict()  # solved once a run (tests/shipped.py)


def mtok_a_year(tokens_per_s_at_peak: float, peak_to_mean: float) -> float:
    return tokens_per_s_at_peak / peak_to_mean * SECONDS_PER_YEAR / 1e6


def test_the_split_adds_up_to_the_blended_cost(plan):
    demands = {x["name"]: x for x in plan["inputs"]["demands"]}
    for w in plan["workloads"]:
        d = demands[w["workload"]]
        calls = d["calls_per_s"] * w["served_share"]
        prompt = mtok_a_year(calls * d["prefill_tokens"], d["peak_to_mean"])
        output = mtok_a_year(d["output_tokens_per_s"] * w["served_share"], d["peak_to_mean"])
        split = w["cost_usd_per_mtok_input"] * prompt + w["cost_usd_per_mtok_output"] * output
        assert split == pytest.approx(w["annual_cost_usd"], rel=1e-9), w["workload"]
        assert split == pytest.approx(w["cost_usd_per_mtok"] * output, rel=1e-9)
        # a cached prompt token skips prefill's compute; without a prefix cache there is none to price
        assert w["cost_usd_per_mtok_cached_input"] == (0.0 if d["input_tokens"] > d["prefill_tokens"] else None)


def test_prefill_pools_pay_the_input_and_decode_pools_the_output(plan):
    by_role = {}
    fleet = {f["hardware"]: f for f in plan["fleet"]}
    for r in plan["allocation"]:
        f = fleet[r["hardware"]]
        cost = r["replicas"] * r["chips_per_replica"] / f["chips_used"] * f["annual_cost_usd"]
        part = 1.0 if r["role"] == "prefill" else (r["prefill_share"] or 0.0) if r["role"] == "colocated" else 0.0
        got = by_role.setdefault(r["workload"], [0.0, 0.0])
        got[0] += part * cost
        got[1] += (1.0 - part) * cost
    demands = {x["name"]: x for x in plan["inputs"]["demands"]}
    for w in plan["workloads"]:
        d = demands[w["workload"]]
        prompt = mtok_a_year(d["calls_per_s"] * w["served_share"] * d["prefill_tokens"], d["peak_to_mean"])
        assert w["cost_usd_per_mtok_input"] * prompt == pytest.approx(by_role[w["workload"]][0], rel=1e-9)
    assert all(c["ok"] for c in check(plan))
