"""site.capacity_headroom (pools sized above the peak) and workloads' peak_requests_per_s (issue 23 item 6)."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.errors import InputError
from planner.fleet.check import check
from planner.fleet.solve import solve
from planner.scenario import load_scenario

BANK = Path(__file__).resolve().parents[1] / "scenarios" / "bank-2mw.yaml"


@pytest.fixture(scope="module")
def plans():
    base = load_scenario(BANK).with_({"site.power_budget_mw": None})
    return base, solve(base), solve(base.with_({"site.capacity_headroom": 0.25}))


def test_headroom_sizes_every_pool_above_the_peak(plans):
    _, plain, roomy = plans
    for w in roomy.to_dict()["workloads"]:
        assert w["served_output_tokens_per_s"] >= 1.25 * w["demand_output_tokens_per_s"] * (1 - 1e-6)
        assert w["served_prefill_tokens_per_s"] >= 1.25 * w["demand_prefill_tokens_per_s"] * (1 - 1e-6)
    assert roomy.objective_usd_per_year > plain.objective_usd_per_year  # headroom is capacity, and capacity costs
    assert all(c["ok"] for c in check(roomy.to_dict()))
    assert any("25% headroom" in a for a in roomy.to_dict()["assumptions"])
    assert any("no headroom" in a for a in plain.to_dict()["assumptions"])


def test_check_holds_a_plan_to_its_headroom(plans):
    _, plain, _ = plans
    d = plain.to_dict()
    for x in d["inputs"]["demands"]:
        x["headroom"] = 0.25  # the same fleet, claimed to carry 25% headroom it does not have
    failed = {c["check"] for c in check(d) if not c["ok"]}
    assert any(name.startswith("demand ") and name.endswith(" decode") for name in failed), failed


def test_a_peak_rate_is_the_mean_rate_times_peak_to_mean(plans):
    base, plain, _ = plans
    w = base.workloads[0]
    peak = base.with_({f"workloads.{w.name}.requests_per_s": None,
                       f"workloads.{w.name}.peak_requests_per_s": w.requests_per_s * w.peak_to_mean})
    assert peak.workloads[0].requests_per_s == pytest.approx(w.requests_per_s, rel=1e-12)
    assert solve(peak).objective_usd_per_year == pytest.approx(plain.objective_usd_per_year, rel=1e-9)


def test_a_peak_rate_and_a_mean_rate_together_is_an_error(plans):
    base, _, _ = plans
    with pytest.raises(InputError, match="peak_requests_per_s"):
        base.with_({f"workloads.{base.workloads[0].name}.peak_requests_per_s": 10.0})
    with pytest.raises(InputError, match="capacity_headroom"):
        base.with_({"site.capacity_headroom": -0.1})


def test_the_headroom_is_what_the_site_sheds_first_and_check_recomputes_it(plans):
    _, plain, roomy = plans
    d = roomy.to_dict()
    shed = d["curtailment"]
    assert shed[0]["workload"] is None and shed[0]["shed_power_mw"] > 0  # the headroom's draw, every workload kept
    assert shed[0]["shed_power_mw"] > plain.to_dict()["curtailment"][0]["shed_power_mw"]
    assert {r["workload"] for r in shed[1:]} == {w["workload"] for w in d["workloads"]}
    assert shed[-1]["shed_power_mw"] == pytest.approx(d["totals"]["power_mw"], rel=1e-9)
    tiers = [r["min_tps_per_user"] for r in shed[1:]]
    assert tiers == sorted(tiers)  # the slowest tier first
    assert all(c["ok"] for c in check(d) if c["check"].startswith("curtailment"))
    d["curtailment"][1]["shed_facility_power_mw"] *= 1.01
    failed = {c["check"] for c in check(d) if not c["ok"]}
    assert failed == {"curtailment 1 shed_facility_power_mw"}


def test_the_curtailment_order_is_a_site_setting(plans):
    base, _, _ = plans
    assert base.site.curtailment_order == "tier"
    with pytest.raises(InputError, match="curtailment_order"):
        base.with_({"site.curtailment_order": "random"})
