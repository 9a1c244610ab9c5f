"""The curtailment table (issue 23 item 6, OPTIMIZER.md 13): what a fleet can shed at its peak, by hand."""

from __future__ import annotations

import math

import pytest

from planner import catalog
from planner.fleet.curtail import curtailment_rows, deferrable_hours
from planner.fleet.demand import Demand
from planner.fleet.finance import idle_power_w

HW = catalog.get_hardware("hgx-h100")  # 8 chips a rack
CURVES = {"average_load_share": None}
PUE = 1.25


def demand(name: str, tps: float, price: float | None, peak_to_mean: float = 2.0, headroom: float = 0.25) -> Demand:
    return Demand(name=name, model="llama-3.1-70b", output_tokens_per_s=1000.0, prefill_tokens_per_s=4000.0,
                  calls_per_s=2.0, input_tokens=2000.0, prefill_tokens=2000.0, output_tokens=500.0,
                  min_tps_per_user=tps, resident_s_per_token=0.0, ttft_s=2.0, ttft_quantile=0.9, precision=None,
                  allow_hardware=None, peak_to_mean=peak_to_mean, tier={100.0: "standard", 200.0: "high"}[tps],
                  price_usd_per_mtok=price, headroom=headroom)


def alloc(workload: str, replicas: float, power_mw: float, role: str = "decode") -> dict:
    return {"workload": workload, "role": role, "hardware": HW.id, "replicas": replicas, "chips_per_replica": 8,
            "power_mw": power_mw, "output_tokens_per_s": 1250.0}


# 3 racks; A (standard) one replica of a rack, B (high) 1.5 replicas: 20 chips of 24 in use
A, B = demand("a", 100.0, 2.0), demand("b", 200.0, 1.0)
ROWS = [alloc("a", 1, 0.009), alloc("b", 1.5, 0.012)]
FLEET = [{"hardware": HW.id, "racks": 3}]
WORKLOADS = [{"workload": "a", "served_share": 1.0}, {"workload": "b", "served_share": 1.0}]


def table(order="tier", finance=CURVES, rows=ROWS, demands=(A, B)):
    return curtailment_rows(FLEET, rows, WORKLOADS, list(demands), {HW.id: HW}, finance, PUE, order)


def test_each_step_by_hand():
    idle = idle_power_w(HW) / 1e6  # MW a rack draws at rest
    above_a, above_b = 0.009 - idle, 0.012 - 1.5 * idle
    peak = 3 * idle + above_a + above_b
    # step 0: every pool at 1 / 1.25 of its capacity, 16 chips working on 2 racks, the third off
    kept = 2 * idle + 0.8 * (above_a + above_b)
    # step 1 sheds a (the slower tier): b's 9.6 chips still need 2 racks
    no_a = 2 * idle + 0.8 * above_b
    t = table()
    assert [r["workload"] for r in t] == [None, "a", "b"]
    assert t[0]["shed_power_mw"] == pytest.approx(peak - kept, rel=1e-12)
    assert t[0]["racks_powered_off"] == 1 and t[0]["deferrable_hours_per_day"] == 24.0
    assert t[1]["step_power_mw"] == pytest.approx(kept - no_a, rel=1e-12)
    assert t[1]["shed_facility_power_mw"] == pytest.approx((peak - no_a) * PUE, rel=1e-12)
    assert t[1]["racks_powered_off"] == 1
    assert t[2]["shed_power_mw"] == pytest.approx(peak, rel=1e-12) and t[2]["shed_share_of_peak"] == 1.0
    assert t[2]["racks_powered_off"] == 3
    # a's peak: 1,000 tok/s x 3,600 s x 2 USD/Mtok; b's at 1 USD/Mtok
    assert t[1]["forgone_revenue_usd_per_hour"] == pytest.approx(7.2, rel=1e-12)
    assert t[2]["forgone_revenue_usd_per_hour"] == pytest.approx(7.2 + 3.6, rel=1e-12)
    assert t[2]["shed_output_tokens_per_s"] == pytest.approx(2000.0, rel=1e-12)
    # spare capacity at the mean: 1.25 - 1 / 2 = 0.75 of the peak; T = 24 x 0.75 / 1.75 hours
    assert t[1]["deferrable_hours_per_day"] == pytest.approx(24 * 0.75 / 1.75, rel=1e-12)


def test_traffic_without_spare_capacity_cannot_wait():
    assert deferrable_hours(1.0, 0.0) == 0.0  # a flat load on pools sized at its peak: shed is lost
    assert deferrable_hours(2.0, 0.0) == pytest.approx(8.0)  # half the peak spare: a third of the day
    assert deferrable_hours(1.0, 0.5) == pytest.approx(8.0)  # headroom alone works a backlog off too


def test_revenue_order_sheds_the_least_revenue_per_mw_first():
    # a earns 7.2 USD/h over its 0.8 x its draw above the floor; b 3.6 USD/h over more: b goes first
    assert [r["workload"] for r in table("revenue")][1:] == ["b", "a"]
    assert [r["workload"] for r in table("tier")][1:] == ["a", "b"]


def test_a_flat_bill_saves_only_the_racks_powered_off():
    flat = {"average_load_share": 0.8}
    t = table(finance=flat)
    rack = HW.rack_power_w / 1e6
    assert [r["shed_power_mw"] for r in t] == pytest.approx([rack, rack, 3 * rack], rel=1e-12)


def test_the_shares_sent_to_an_api_are_not_the_sites_to_shed():
    api = {"workload": "a", "role": "api", "hardware": "api:x", "replicas": 0.5, "chips_per_replica": 0,
           "power_mw": 0.0, "output_tokens_per_s": 625.0}  # half the sized demand
    t = table(rows=[ROWS[0], api, ROWS[1]])
    assert t[1]["workload"] == "a" and t[1]["shed_output_tokens_per_s"] == pytest.approx(500.0, rel=1e-12)
    assert t[1]["forgone_revenue_usd_per_hour"] == pytest.approx(3.6, rel=1e-12)


def test_no_fleet_no_table():
    assert curtailment_rows([], [], [], [], {}, CURVES, PUE) == []
    assert all(math.isfinite(r["shed_power_mw"]) for r in table())
