"""Spare replicas (issue 41 item 3; docs/OPTIMIZER.md 19): site.redundancy (none, n+1, rack) and a workload's
spare_replicas give each pool min(K, x) spares, priced in the plan, held by check, shown in the answer."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.fleet.check import check
from planner.fleet.solve import solve
from planner.fleet.spares import spare_count, spare_rule, spare_share, spares_needed, stages_a_rack_holds
from planner.report.summary import summary_lines
from planner.scenario import load_scenario
from planner.sim import simulate

BANK = "scenarios/bank-2mw.yaml"


def test_the_rules_by_hand():
    assert spare_rule("none") == ("none", 0) and spare_rule("rack") == ("rack", 0) and spare_rule("n+3") == ("n+", 3)
    for bad in ("n+0", "n+", "N+1", "2", "racks"):
        with pytest.raises(ValueError):
            spare_rule(bad)
    # a rack of 72 chips holds one 64-chip stage, two of 32 (and 8 chips beside), 72 of one chip; a stage wider
    # than a rack is one replica a rack
    assert [stages_a_rack_holds(s, 72) for s in (64, 32, 1, 144)] == [1.0, 2.0, 72.0, 1.0]
    assert spare_count("rack", [(64, 2, 72)]) == 2.0  # two stages of 32: a rack holds two replicas' stages
    assert spare_count("rack", [(4, 1, 72), (8, 1, 8)]) == 18.0  # a split: the side a rack holds more of
    assert spare_count("n+2", [(64, 1, 72)]) == 2.0 and spare_count("none", [(1, 1, 8)]) == 0.0
    # min(K, x): a pool smaller than K is held twice over
    assert spares_needed(8, 38) == 8 and spares_needed(8, 3) == 3 and spares_needed(1, 0.25) == 0.25
    # f = min(K, x0) / x0 at the assumed pool; 1 where the pool is unknown
    assert list(spare_share(np.array([1.0, 8.0, 8.0, 0.0, 2.0]), np.array([4.0, 38.0, 3.0, 5.0, 0.0]))) == \
        pytest.approx([0.25, 8 / 38, 1.0, 0.0, 1.0])


@pytest.fixture(scope="module")
def plain():
    return solve(load_scenario(BANK))


@pytest.fixture(scope="module")
def n_plus_1():
    return solve(load_scenario(BANK, ["site.redundancy=n+1"]))


@pytest.fixture(scope="module")
def by_rack():
    return solve(load_scenario(BANK, ["site.redundancy=rack"]))


@pytest.mark.integration
def test_every_pool_holds_its_spares_priced_in_the_plan(plain, n_plus_1, by_rack):
    """n+1: each pool at least one spare (its own size where it is a fraction of one); rack: a rack's worth of
    the pool's replicas (8 one-chip replicas on an 8-GPU HGX B200), the whole pool where it is smaller. The spares'
    chips are in the racks bought and in the cost."""
    for plan, k in ((n_plus_1, None), (by_rack, "rack")):
        d = plan.to_dict()
        assert all(c["ok"] for c in d["checks"])
        rows = [r for r in d["allocation"] if r["role"] != "api"]
        for r in rows:
            count = 1.0 if k is None else 8.0 // r["chips_per_replica"] or 1.0
            assert r["spare_replicas"] >= min(count, r["replicas"]) * (1 - 1e-9), r
        spares = [c for c in d["checks"] if c["check"].endswith(" spares")]
        assert len(spares) == len(rows)
        held = sum((r["replicas"] + r["spare_replicas"]) * r["chips_per_replica"] for r in rows)
        assert d["fleet"][0]["chips_used"] + sum(f["chips_used"] for f in d["fleet"][1:]) == pytest.approx(held)
    costs = [p.objective_usd_per_year for p in (plain, n_plus_1, by_rack)]
    assert costs[0] < costs[1] < costs[2]
    assert all(r["spare_replicas"] == 0 for r in plain.to_dict()["allocation"])


@pytest.mark.integration
def test_check_fails_a_plan_short_of_its_spares(n_plus_1):
    d = copy.deepcopy(n_plus_1.to_dict())
    row = next(r for r in d["allocation"] if r["role"] == "decode")
    row["spare_replicas"] = 0.0
    failed = [c for c in check(d) if not c["ok"]]
    assert any(c["check"].endswith(" spares") and "at least 1" in c["detail"] for c in failed)


@pytest.mark.integration
def test_a_workload_s_own_spares_replace_the_site_s_and_the_plan_holds_in_simulation():
    plan = solve(load_scenario(BANK, ["site.redundancy=n+1", "workloads.customer-chatbot.spare_replicas=3",
                                      "workloads.code-completion.spare_replicas=0"]))
    d = plan.to_dict()
    by = {w["name"]: w["redundancy"] for w in d["inputs"]["demands"]}
    assert by == {"employee-assistant": "n+1", "customer-chatbot": "n+3", "document-extraction": "n+1",
                  "code-completion": "none"}
    for r in d["allocation"]:
        need = {"n+1": 1.0, "n+3": 3.0, "none": 0.0}[by[r["workload"]]]
        assert r["spare_replicas"] >= min(need, r["replicas"]) * (1 - 1e-9)
        if by[r["workload"]] == "none":
            assert r["spare_replicas"] == 0
    sim = simulate(plan, quick=True)  # spares idle: the served replicas carry the load as before
    assert sim.holds, sim.failures


@pytest.mark.integration
def test_the_answer_says_what_the_spares_take(plain, by_rack):
    """The first screen's lines (``summary_lines``, what `planner solve` prints: the CLI against the library is
    tests/test_cli.py's) of the plans above, not solved again."""
    line = next(x for x in summary_lines(by_rack.to_dict()) if x.startswith("spares:"))
    assert "(rack)" in line and "% of those the plan runs on" in line
    assert not any(x.startswith("spares:") for x in summary_lines(plain.to_dict()))


@pytest.mark.parametrize("args, field", [
    (["site.redundancy=n+2"], "site.redundancy"),
    (["workloads.customer-chatbot.spare_replicas=-1"], "spare_replicas"),
])
def test_bad_settings_name_the_field(args, field):
    out = CliRunner().invoke(main, ["validate", BANK, *[x for a in args for x in ("--set", a)]])
    assert out.exit_code == 2 and field in out.output, out.output


@pytest.mark.integration
def test_a_build_out_or_a_robust_fleet_with_spares_is_refused_naming_the_field():
    out = CliRunner().invoke(main, ["solve", "scenarios/buildout-2027-2030.yaml", "-q", "--set",
                                    "workloads.consumer-chat.spare_replicas=1"])
    assert out.exit_code == 2 and "workloads.consumer-chat.spare_replicas" in out.output, out.output
