"""Renting capacity by the chip-hour beside buying (hardware rental offers, docs/OPTIMIZER.md 11, row (12)):
rented chips hold replicas, cost their price every hour, draw no site power; cloud-only systems become rentable."""

from __future__ import annotations

import copy

import pytest
import yaml

from planner.errors import InputError, PlannerError
from planner.fleet.check import check
from planner.fleet.solve import solve
from planner.scenario import scenario_from_yaml
from planner.vocabulary import HOURS_PER_YEAR

OFFER = {"name": "neocloud-1y", "usd_per_chip_hour": 2.0, "term_months": 12, "max_chips": 12}


def scenario(rate: float, offer=OFFER, allow=("hgx-b200",), rented="hgx-b200", **extra):
    hardware = {"overrides": {rented: {"rental": [copy.deepcopy(offer)]}}}
    if allow is not None:
        hardware["allow"] = list(allow)
    d = {"name": "rent-site", "start_date": "2026-03-01", "horizon_years": 4,
         "finance": {"wacc": 0.08, "electricity_usd_per_mwh": 70.0, "pue": 1.25,
                     "average_load_share": 1.0},  # design power: the hand figures are the rack's own
         "hardware": hardware,
         "workloads": [{"name": "chat", "model": "llama-3.1-70b", "requests_per_s": rate, "input_tokens": 2000,
                        "output_tokens": 500, "tier": "standard"}]}
    d.update(extra)
    return scenario_from_yaml(yaml.safe_dump(d, sort_keys=False))


@pytest.fixture(scope="module")
def mixed():
    return solve(scenario(85.0)).to_dict()


def test_rented_chips_top_up_the_racks_bought(mixed):
    # 15 B200 chips are needed at 85 requests/s: one 8-GPU server (169 k USD a year) and 7 chips rented at 2 USD an hour
    # (7 x 2 x 8,760 = 122,640 USD a year) beat two servers, and the offer's 12 chips cannot hold all 15
    fleet = mixed["fleet"][0]
    assert fleet["racks"] == 1 and fleet["chips_rented"] == pytest.approx(7.0)
    assert mixed["rentals"][0]["usd_per_year"] == pytest.approx(7 * 2.0 * HOURS_PER_YEAR)
    assert fleet["annual_cost_usd"] == pytest.approx(169325.312 + 122640.0, rel=1e-6)
    assert fleet["power_mw"] == pytest.approx(0.0143)  # the rented chips draw nothing at the site
    assert {r["acquisition"] for r in mixed["allocation"]} == {"owned", "rented"}
    assert all(c["ok"] for c in mixed["checks"])


def test_the_break_even_utilisation_is_owning_over_renting(mixed):
    fleet = mixed["fleet"][0]
    owned_per_chip = 169325.312 / 8
    assert fleet["breakeven_utilization"] == pytest.approx(owned_per_chip / (2.0 * HOURS_PER_YEAR), rel=1e-6)


def test_an_offer_dearer_than_owning_is_left_alone():
    plan = solve(scenario(85.0, offer=dict(OFFER, usd_per_chip_hour=9.0))).to_dict()
    assert not plan["rentals"] and plan["fleet"][0]["racks"] == 2


def test_check_refuses_rented_chips_beyond_the_offer_or_at_another_price(mixed):
    d = copy.deepcopy(mixed)
    d["rentals"][0]["usd_per_year"] *= 0.5
    assert any(not c["ok"] and "usd_per_year" in c["check"] for c in check(d))
    d = copy.deepcopy(mixed)
    d["rentals"][0]["chips"] = 20.0
    assert any(not c["ok"] and c["check"].endswith(" chips") for c in check(d))


def test_a_cloud_only_system_is_rentable_though_it_cannot_be_bought():
    # Trainium2 is sold only as cloud capacity: under the default buying policy (merchant racks) it is left out;
    # with a rental offer it is usable, rented and never bought
    assert "trn2-ultraserver" not in scenario(20.0, allow=None, rented="hgx-b200").resolved_hardware()
    sc = scenario(20.0, offer=dict(OFFER, max_chips=None, usd_per_chip_hour=0.05), allow=None,
                  rented="trn2-ultraserver")
    assert "trn2-ultraserver" in sc.resolved_hardware() and sc.new_rack_caps()["trn2-ultraserver"] == 0.0
    plan = solve(sc).to_dict()
    assert {r["hardware"] for r in plan["rentals"]} == {"trn2-ultraserver"}
    assert all(f["racks"] == 0 for f in plan["fleet"] if f["hardware"] == "trn2-ultraserver")
    assert all(c["ok"] for c in plan["checks"])


def test_a_bad_offer_names_the_field():
    with pytest.raises(InputError, match="usd_per_chip_hour"):
        scenario(10.0, offer=dict(OFFER, usd_per_chip_hour=-1.0))


def test_out_writes_the_rentals_table(tmp_path):
    from planner.report.files import write_files

    plan = solve(scenario(85.0))
    write_files(plan, tmp_path)
    text = (tmp_path / "rentals.csv").read_text().splitlines()
    assert text[0] == "hardware,offer,chips,usd_per_chip_hour,term_months,usd_per_year"
    assert text[1].startswith("hgx-b200,neocloud-1y,7.0,")
    assert (tmp_path / "rentals.parquet").exists()


# ---- one offer over several sites (OPTIMIZER.md 21): one provider's capacity, whichever site rents it ------------
def two_sites(max_chips):
    """Two sites of one 8-GPU B200 server each (16 kW of facility power at PUE 1.25 holds one 14.3 kW server), each
    with its own 85 requests/s that needs 15 chips: each site rents 7 chips from the one offer, 14 over both."""
    d = {"name": "rent-two-sites", "start_date": "2026-03-01", "horizon_years": 4,
         "finance": {"wacc": 0.08, "electricity_usd_per_mwh": 70.0, "pue": 1.25, "average_load_share": 1.0},
         "sites": [{"name": "a", "power_budget_mw": 0.02}, {"name": "b", "power_budget_mw": 0.02}],
         "hardware": {"allow": ["hgx-b200"],
                      "overrides": {"hgx-b200": {"rental": [dict(OFFER, max_chips=max_chips)]}}},
         "workloads": [{"name": f"chat-{s}", "model": "llama-3.1-70b", "sites": [s], "requests_per_s": 85.0,
                        "input_tokens": 2000, "output_tokens": 500, "tier": "standard"} for s in ("a", "b")]}
    return scenario_from_yaml(yaml.safe_dump(d, sort_keys=False))


def test_one_offer_rented_at_two_sites_rents_its_chips_once():
    plan = solve(two_sites(20)).to_dict()
    rentals = sorted(plan["rentals"], key=lambda r: r["site"])
    assert [(r["hardware"], r["site"], r["chips"]) for r in rentals] == [
        ("hgx-b200@a", "a", pytest.approx(7.0)), ("hgx-b200@b", "b", pytest.approx(7.0))]
    assert [(f["hardware"], f["racks"], f["chips_rented"]) for f in plan["fleet"]] == [
        ("hgx-b200@a", 1, pytest.approx(7.0)), ("hgx-b200@b", 1, pytest.approx(7.0))]
    assert all(c["ok"] for c in plan["checks"])
    # a plan that rents more of the offer over its sites than it has is refused, though each site's rows hold
    d = copy.deepcopy(plan)
    for r in d["rentals"]:
        r["chips"], r["usd_per_year"] = 11.0, 11.0 * 2.0 * HOURS_PER_YEAR
    failed = [c["check"] for c in check(d) if not c["ok"]]
    assert "rental hgx-b200/neocloud-1y over the sites" in failed, failed


def test_an_offer_too_small_for_both_sites_together_leaves_no_plan():
    # 12 chips would hold either site's 7, not both: the rest takes a second server at a site whose power holds one
    with pytest.raises(PlannerError, match="no feasible fleet"):
        solve(two_sites(12))
