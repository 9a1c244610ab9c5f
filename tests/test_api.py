"""Hosted API offers beside the fleet (a workload's ``api``, docs/OPTIMIZER.md 10, row (11) of the MILP): capacity
without racks, priced per token; taken where it is cheaper than racks, checked like every row."""

from __future__ import annotations

import copy
import json

import pytest
import yaml
from click.testing import CliRunner

from planner.cli import main
from planner.errors import InputError
from planner.fleet.check import check
from planner.fleet.solve import solve
from planner.scenario import scenario_from_yaml

OFFER = {"name": "hosted-70b", "usd_per_mtok_input": 0.05, "usd_per_mtok_cached_input": 0.01,
         "usd_per_mtok_output": 0.25, "max_tps_per_user": 120.0}


def scenario(rate: float, offers=(OFFER,), **extra):
    d = {"name": "api-site", "start_date": "2026-03-01", "horizon_years": 4,
         "finance": {"wacc": 0.08, "electricity_usd_per_mwh": 70.0, "pue": 1.25},
         "hardware": {"allow": ["hgx-b200"]},
         "workloads": [{"name": "chat", "model": "llama-3.1-70b", "requests_per_s": rate, "input_tokens": 2000,
                        "output_tokens": 500, "tier": "standard", "prefix_cache_hit": 0.5,
                        "speculative": {"method": "none"}, "api": [copy.deepcopy(o) for o in offers]}]}
    d.update(extra)
    return scenario_from_yaml(yaml.safe_dump(d, sort_keys=False))


def hosted_share(plan) -> float:
    return sum(r["replicas"] for r in plan.to_dict()["allocation"] if r["acquisition"] == "api")


@pytest.fixture(scope="module")
def low():
    return solve(scenario(1.0))


@pytest.fixture(scope="module")
def high():
    return solve(scenario(400.0))


def test_an_api_is_cheaper_than_owning_at_low_use_and_dearer_at_high(low, high):
    # 1 request/s barely uses one 8-GPU server, whose cost is whole: the API serves it all. At 400 requests/s the
    # servers run full, and their cost per token falls below the API's price: the fleet serves nearly all of it,
    # the API only the sliver that would otherwise take one more whole server.
    assert hosted_share(low) == pytest.approx(1.0) and not low.to_dict()["fleet"]
    assert hosted_share(high) < 0.1 and high.to_dict()["fleet"]
    all_hosted = 400.0 * hosted_cost_a_year_per_request_per_s()
    assert high.objective_usd_per_year < 0.8 * all_hosted
    for plan in (low, high):
        assert all(c["ok"] for c in check(plan.to_dict()))
    # at low use the cost per token is the offer's own prices
    w = low.to_dict()["workloads"][0]
    assert w["cost_usd_per_mtok_input"] == pytest.approx(0.05)
    assert w["cost_usd_per_mtok_cached_input"] == pytest.approx(0.01)
    assert w["cost_usd_per_mtok_output"] == pytest.approx(0.25)
    assert low.totals["api_cost_usd"] == pytest.approx(low.objective_usd_per_year)


def hosted_cost_a_year_per_request_per_s() -> float:
    # 1 request/s x a year (365 days) = 31.536 M calls: 1,000 prefilled and 1,000 cached prompt tokens, 500 output
    return 365.0 * 86400.0 * (1000 * 0.05 + 1000 * 0.01 + 500 * 0.25) / 1e6


def test_the_api_cost_is_its_prices_on_the_tokens_served(low):
    want = hosted_cost_a_year_per_request_per_s()
    row = next(r for r in low.to_dict()["allocation"] if r["acquisition"] == "api")
    assert row["api_cost_usd"] == pytest.approx(want, rel=1e-12)
    assert row["role"] == "api" and row["hardware"] == "api:hosted-70b" and row["chips_per_replica"] == 0


def test_an_offer_below_the_tier_is_left_out():
    slow = dict(OFFER, name="slow", max_tps_per_user=60.0, usd_per_mtok_output=0.0, usd_per_mtok_input=0.0,
                usd_per_mtok_cached_input=0.0)
    plan = solve(scenario(1.0, offers=(slow,)))
    assert hosted_share(plan) == 0.0 and plan.to_dict()["fleet"]


def test_check_refuses_an_api_row_whose_cost_or_offer_is_wrong(low):
    d = low.to_dict()
    row = next(r for r in d["allocation"] if r["acquisition"] == "api")
    row["api_cost_usd"] *= 0.5
    assert any(not c["ok"] and "api_cost_usd" in c["check"] for c in check(d))
    d = low.to_dict()
    row = next(r for r in d["allocation"] if r["acquisition"] == "api")
    row["measurement"] = "another"
    assert any(not c["ok"] and "not an api offer" in c["detail"] for c in check(d))


def test_api_offers_on_the_cli_are_the_library(low, tmp_path):
    path = tmp_path / "api.yaml"
    path.write_text(yaml.safe_dump(low.built.scenario.model_dump(mode="json", exclude_unset=True)))
    res = CliRunner().invoke(main, ["solve", str(path), "--format", "json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert [(r["acquisition"], r["replicas"]) for r in d["allocation"]] == \
        [(r["acquisition"], r["replicas"]) for r in low.to_dict()["allocation"]]
    assert "api:" in CliRunner().invoke(main, ["solve", str(path)]).output


def test_bad_offers_and_unsupported_uses_name_the_field():
    with pytest.raises(InputError, match="unique"):
        scenario(1.0, offers=(OFFER, OFFER))
    with pytest.raises(InputError, match="usd_per_mtok_output"):
        scenario(1.0, offers=({k: v for k, v in OFFER.items() if k != "usd_per_mtok_output"},))
    with pytest.raises(InputError, match="api offers"):
        scenario(1.0, periods=["2026-03-01", "2027-03-01"], horizon_years=4)


def test_a_free_offer_that_meets_the_tier_serves_the_workload_at_no_cost():
    # prices of 0 are valid (a lab's own hosted endpoint, a promotional credit): the offer's column has no chips and
    # no cost, which the fleet problem refused with a traceback (issue 43); now it serves the demand, and no more
    free = dict(OFFER, name="free", usd_per_mtok_output=0.0, usd_per_mtok_input=0.0, usd_per_mtok_cached_input=0.0)
    plan = solve(scenario(1.0, offers=(free,)))
    assert hosted_share(plan) == pytest.approx(1.0) and not plan.to_dict()["fleet"]
    assert plan.objective_usd_per_year == 0.0 and plan.totals["api_cost_usd"] == 0.0
    assert all(c["ok"] for c in check(plan.to_dict()))


# ---- an offer's stated TTFT (what its users see at the client): held to the workload's target ---------------------
def test_an_offer_whose_stated_ttft_misses_the_target_is_left_out():
    # the workload's target is 2 s at p90 (the tier's default): an offer stating 2.5 s is left out (before, every
    # offer was taken to meet any TTFT: "their TTFT unchecked"), one stating 0.3 s serves it and reports 0.3 s
    slow = solve(scenario(1.0, offers=(dict(OFFER, ttft_s=2.5),)))
    assert hosted_share(slow) == 0.0 and slow.to_dict()["fleet"]
    fast = solve(scenario(1.0, offers=(dict(OFFER, ttft_s=0.3),)))
    d = fast.to_dict()
    assert hosted_share(fast) == pytest.approx(1.0)
    row = next(r for r in d["allocation"] if r["acquisition"] == "api")
    assert row["ttft_s"] == pytest.approx(0.3)
    assert all(c["ok"] for c in check(d))
    assert any("TTFT as stated (hosted-70b 0.3 s)" in line for line in d["assumptions"]), d["assumptions"]
    # a plan whose api row claims another TTFT than its offer states fails its check
    row["ttft_s"] = 0.1
    assert any(not c["ok"] and c["check"].endswith("ttft_s") for c in check(d))


def test_an_offer_without_a_stated_ttft_is_taken_to_meet_it_and_says_so(low):
    lines = low.to_dict()["assumptions"]
    assert any("TTFT unstated for hosted-70b, taken to meet the target" in line for line in lines), lines
