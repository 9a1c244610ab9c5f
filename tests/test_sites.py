"""Several sites in one plan (docs/OPTIMIZER.md 21, INTERFACE.md "Several sites"): the scenario's sites, one MILP
over them, the plan's rows and totals by site, check per site; a site split in two never costs less than the whole.
The MILP itself is held to the brute force in tests/test_sites_milp.py."""

from __future__ import annotations

import json

import pytest
import yaml

from planner.errors import InputError
from planner.fleet.check import check
from planner.fleet.solve import solve
from planner.report.html import render_plan_html
from planner.scenario import load_scenario, scenario_from_yaml
from tests.shipped import shipped_plan

pytestmark = pytest.mark.integration

TWO_SITES = "scenarios/two-sites.yaml"

# A small site of two workloads on two air-cooled systems: quick to solve, and its budget binds
SMALL = """
name: small
start_date: 2026-01-01
horizon_years: 5
finance: {wacc: 0.07, electricity_usd_per_mwh: 100, pue: 1.3, maintenance_share_of_capex_per_year: 0.05}
hardware: {allow: [hgx-h100, hgx-b200]}
workloads:
  - {name: chat, model: llama-3.1-8b, requests_per_s: 8000, input_tokens: 1000, output_tokens: 300, tier: high}
  - {name: assistant, model: llama-3.1-70b, requests_per_s: 800, input_tokens: 2000, output_tokens: 400,
     tier: standard, precision: fp8}
solver: {name: highs, time_limit_s: 60, relative_gap: 0.001}
"""


def scenario_with(text: str, **changes):
    data = yaml.safe_load(text)
    data.update(changes)
    return scenario_from_yaml(yaml.safe_dump(data))


def failed(plan) -> list[dict]:
    return [c for c in check(plan) if not c["ok"]]


@pytest.fixture(scope="module")
def two_sites():
    return shipped_plan("two-sites")  # solved once a run (tests/shipped.py)


def test_the_two_site_plan_holds_and_says_what_goes_where(two_sites):
    plan = two_sites
    assert plan.status == "optimal" and failed(plan) == []
    d = plan.to_dict()
    sites = {e["name"]: e for e in d["totals"]["sites"]}
    assert set(sites) == {"city", "colo"}
    for row in d["fleet"]:
        assert row["hardware"] == f"{row['hardware'].split('@')[0]}@{row['site']}"
    # a workload limited to the city (customer data, latency) has every replica there
    for row in d["allocation"]:
        assert row["site"] == row["hardware"].split("@")[1]
        if row["workload"] in ("customer-chatbot", "code-completion"):
            assert row["site"] == "city", row
    # each site within its own budget and floor space, and the sites sum to the whole
    for name, e in sites.items():
        assert e["facility_power_mw"] <= e["power_budget_mw"] and e["racks"] <= e["max_racks"]
    assert sum(e["racks"] for e in sites.values()) == d["totals"]["racks"]
    assert sum(e["annual_cost_usd"] for e in sites.values()) == pytest.approx(d["totals"]["annual_cost_usd"])
    assert sum(e["facility_power_mw"] for e in sites.values()) == pytest.approx(d["totals"]["facility_power_mw"])


def test_the_report_says_what_goes_where(two_sites):
    page = render_plan_html(two_sites)
    section = page[page.index('<section id="sites">'):]
    section = section[:section.index("</section>")]
    for e in two_sites.totals["sites"]:
        assert f">{e['name']}<" in section and f">{e['racks']:,}<" in section
    assert "hgx-b200@colo" in page and "sites:    city" in page


def test_check_finds_a_site_over_its_budget(two_sites):
    d = json.loads(json.dumps(two_sites.to_dict()))
    city = next(e for e in d["inputs"]["sites"] if e["name"] == "city")
    used = next(e for e in d["totals"]["sites"] if e["name"] == "city")["facility_power_mw"]
    city["site"]["power_budget_mw"] = used / 2  # the plan's own city room, with half the power it draws
    bad = {c["check"] for c in check(d) if not c["ok"]}
    assert "power budget city" in bad
    d = json.loads(json.dumps(two_sites.to_dict()))
    d["allocation"][0]["site"] = "elsewhere"
    assert "allocation sites" in {c["check"] for c in check(d) if not c["ok"]}


def test_a_site_split_in_two_never_costs_less_than_the_whole():
    # the least-cost fleet draws 0.537 MW on 31 racks: the whole site's budget and floor space nearly bind, and
    # each half's more so
    whole = scenario_with(SMALL, site={"power_budget_mw": 0.545, "max_racks": 32})
    split = scenario_with(SMALL, sites=[{"name": "a", "power_budget_mw": 0.2725, "max_racks": 16},
                                        {"name": "b", "power_budget_mw": 0.2725, "max_racks": 16}])
    one = scenario_with(SMALL, sites=[{"name": "a", "power_budget_mw": 0.545, "max_racks": 32}])
    for solver in ("highs", "scip"):
        w, s, o = (solve(x.with_({"solver.name": solver})) for x in (whole, split, one))
        for plan in (w, s, o):
            assert plan.status in ("optimal", "feasible") and not failed(plan), (solver, plan.solver)
        # every plan of the split is a plan of the whole (a row more per site): it costs no less than the whole's
        # proved bound
        assert s.objective_usd_per_year >= w.solver["best_bound"] * (1 - 1e-9), solver
        # one site named in sites: is the whole site again, within the two solves' gaps
        assert o.objective_usd_per_year >= w.solver["best_bound"] * (1 - 1e-9), solver
        assert w.objective_usd_per_year >= o.solver["best_bound"] * (1 - 1e-9), solver


def test_cheaper_energy_draws_the_racks_that_may_move():
    # two sites with room for all, one with power at a third of the price: every workload may go anywhere, so
    # everything stands at the cheap site; pinned to the dear one, a workload stays there
    sites = [{"name": "dear", "electricity_usd_per_mwh": 150}, {"name": "cheap", "electricity_usd_per_mwh": 50}]
    plan = solve(scenario_with(SMALL, sites=sites))
    assert {r["site"] for r in plan.to_dict()["allocation"]} == {"cheap"} and not failed(plan)
    data = yaml.safe_load(SMALL)
    data["sites"] = sites
    data["workloads"][0]["sites"] = ["dear"]
    plan = solve(scenario_from_yaml(yaml.safe_dump(data)))
    rows = plan.to_dict()["allocation"]
    assert {r["site"] for r in rows if r["workload"] == "chat"} == {"dear"} and not failed(plan)
    # the assistant may still fill the room left in the dear site's racks, but buys its own racks at the cheap one
    assert "cheap" in {r["site"] for r in rows if r["workload"] == "assistant"}


def test_installed_racks_stay_at_their_site():
    sites = [{"name": "a", "installed": [{"hardware": "hgx-h100", "racks": 6, "bought": "2025-01-01"}]},
             {"name": "b"}]
    plan = solve(scenario_with(SMALL, sites=sites))
    fleet = {r["hardware"]: r for r in plan.to_dict()["fleet"]}
    assert fleet["hgx-h100@a"]["racks_installed"] + fleet["hgx-h100@a"]["racks_retired"] == 6
    assert "hgx-h100@b" not in fleet or fleet["hgx-h100@b"]["racks_installed"] == 0
    assert not failed(plan)


@pytest.mark.parametrize("changes, field", [
    ({"sites": [{"name": "a"}, {"name": "a"}]}, "sites[1].name"),
    ({"sites": [{"name": "a b"}]}, "sites[0].name"),
    ({"sites": [{"name": "a"}], "site": {"power_budget_mw": 1}}, "site.power_budget_mw"),
    ({"sites": [{"name": "a"}], "installed": [{"hardware": "hgx-h100", "racks": 1, "bought": "2025-01-01"}]},
     "installed"),
    ({"sites": [{"name": "a", "power_budget_mw": [1, 2]}]}, "sites[0].power_budget_mw"),  # per period: no periods
    ({"sites": [{"name": "a", "allow": ["hgx-h1000"]}]}, "sites[0].allow[0]"),
])
def test_a_bad_site_names_its_field(changes, field):
    with pytest.raises(InputError) as exc:
        scenario_with(SMALL, **changes)
    assert field in str(exc.value), str(exc.value)


def test_a_workload_naming_an_unknown_site_says_so():
    data = yaml.safe_load(SMALL)
    data["sites"] = [{"name": "east"}, {"name": "west"}]
    data["workloads"][0]["sites"] = ["eats"]
    with pytest.raises(InputError, match=r"workloads\[0\]\.sites\[0\].*unknown site 'eats'.*did you mean 'east'"):
        scenario_from_yaml(yaml.safe_dump(data))


def test_a_supply_cap_spans_the_sites():
    # hgx-b200 capped at 20 racks over both sites (the least-cost fleet wants 30 of it): the plan buys at most 20 in
    # all, and check holds the cap over the sites, not per site
    sites = [{"name": "a"}, {"name": "b", "electricity_usd_per_mwh": 60}]
    plan = solve(scenario_with(SMALL, sites=sites, hardware={"allow": ["hgx-h100", "hgx-b200"],
                                                             "max_racks": {"hgx-b200": 20}}))
    fleet = plan.to_dict()["fleet"]
    assert sum(r["racks_new"] for r in fleet if r["hardware"].startswith("hgx-b200@")) <= 20 and not failed(plan)
    d = json.loads(json.dumps(plan.to_dict()))
    d["inputs"]["scenario"]["max_racks"]["hgx-b200"] = 12  # more than either site buys alone, less than both
    bad = {c["check"] for c in check(d) if not c["ok"]}
    assert {"supply cap hgx-b200@a", "supply cap hgx-b200@b"} & bad, bad


def test_an_infeasible_plan_over_sites_says_which_site_and_what():
    from planner.errors import InfeasibleError

    base = load_scenario(TWO_SITES)
    with pytest.raises(InfeasibleError, match=r"site city: its 0\.3 MW and 40 racks cannot hold what only it may "
                                              r"serve \(customer-chatbot, code-completion\)"):
        solve(base.with_({"sites.0.power_budget_mw": 0.3}))
    with pytest.raises(InfeasibleError, match=r"each site holds what only it may serve, but not everything together"):
        solve(base.with_({"sites.0.power_budget_mw": 0.4, "sites.1.power_budget_mw": 0.3}))


def test_a_robust_fleet_over_sites_keeps_each_sites_racks_and_holds_every_sample(tmp_path):
    """One fleet for two demand levels of a small site split in two (OPTIMIZER.md 21): racks by system@site, each sample
    served within each site's budget and floor space, the plan of the scenario itself checked (before: refused,
    "robust fleets over several sites are not supported yet")."""
    from planner.sweep.robust import solve_robust

    sweep = tmp_path / "s.yaml"
    sweep.write_text("base: x.yaml\naxes:\n  - {path: workloads.0.requests_per_s, values: [300, 480]}\n")
    base = scenario_with(SMALL.replace("8000", "300"), sites=[{"name": "a", "power_budget_mw": 0.1},
                                                              {"name": "b", "power_budget_mw": 0.4}])
    plan = solve_robust(base, str(sweep))
    fleet = {f["hardware"]: f["robust_racks"] for f in plan.robust["fleet"]}
    assert fleet and all("@" in h for h in fleet), fleet
    assert plan.robust["samples"] == 2 and plan.robust["solver"]["status"] in ("optimal", "feasible")
    assert all(c["ok"] for c in plan.checks)
    d = plan.to_dict()
    assert {f["hardware"] for f in d["fleet"] if f["racks"]} >= {h for h, n in fleet.items() if n}


def test_the_two_site_plan_simulates_pool_by_pool_at_each_site(two_sites):
    from planner.sim.run import simulate

    sim = simulate(two_sites, quick=True)
    pools = {(p["hardware"], p["role"]) for p in sim.to_dict()["pools"]}
    # every allocation row's pool at its own site's racks, the sites' pools apart
    rows = {(r["hardware"], r["role"]) for r in two_sites.to_dict()["allocation"] if r["role"] != "ffn"}
    assert rows <= pools and {h.split("@")[1] for h, _ in pools} == {"city", "colo"}


def test_a_binding_site_limit_is_priced_at_that_site():
    from planner.fleet.whatif import limit_changes, marginal_values

    # the cheap site's 0.25 MW binds (everything would go there), the dear one has room
    sites = [{"name": "dear", "electricity_usd_per_mwh": 150},
             {"name": "cheap", "electricity_usd_per_mwh": 50, "power_budget_mw": 0.25}]
    plan = solve(scenario_with(SMALL, sites=sites))
    changes = limit_changes(plan)
    assert ("one more MW of facility power at cheap", {"sites.1.power_budget_mw": 1.25}) in changes
    row = next(r for r in marginal_values(plan) if r["limit"] == "one more MW of facility power at cheap")
    # one more MW at the cheap site moves racks from the dear one: worth what their energy costs more there
    assert row["unit"] == "USD/year" and row["worth"] > 0 and row["within_gap"] is False, row


def test_each_site_sheds_at_its_own_peak(two_sites):
    """OPTIMIZER.md 21: each site's curtailment steps from its own racks and rows (it was one empty table): every
    site's step 0 first, each step shedding a workload that site serves; a workload served at both sites sheds its
    tokens split between them by their replicas' capacity; the last step at a site powers off every rack there;
    check rebuilds it and catches a step moved to the other site."""
    d = two_sites.to_dict()
    rows = d["curtailment"]
    assert [r["site"] for r in rows if r["step"] == 0] == ["city", "colo"]
    served_at = {(r["workload"], r["site"]) for r in d["allocation"]}
    for r in rows:
        assert r["step"] == 0 or (r["workload"], r["site"]) in served_at
    racks = {e["name"]: e["racks"] for e in d["totals"]["sites"]}
    for site in racks:
        mine = [r for r in rows if r["site"] == site]
        assert mine[-1]["racks_powered_off"] == racks[site]
        facility = next(e for e in d["totals"]["sites"] if e["name"] == site)["facility_power_mw"]
        assert mine[-1]["shed_facility_power_mw"] == pytest.approx(facility, rel=1e-9)
    both = {w for w, s in served_at if (w, "city") in served_at and (w, "colo") in served_at}
    for w in both:  # shed in two parts that add up to what the plan serves of it
        parts = [r["step_power_mw"] for r in rows if r["workload"] == w]
        tokens = sum(r["shed_output_tokens_per_s"] - prev["shed_output_tokens_per_s"]
                     for prev, r in zip(rows, rows[1:]) if r["workload"] == w)
        served = next(x for x in d["workloads"] if x["workload"] == w)["demand_output_tokens_per_s"]
        assert len(parts) == 2 and tokens == pytest.approx(served, rel=1e-9)
    assert not failed(two_sites)
    moved = json.loads(json.dumps(d))
    moved["curtailment"][1]["site"] = "colo"
    assert any(c["check"].startswith("curtailment") for c in check(moved) if not c["ok"])
    assert "at city sheds" in " ".join(render_plan_html(two_sites).split())


def test_a_sweep_over_sites_counts_each_sites_racks(tmp_path):
    """A sweep of a scenario over several sites reports racks by system@site, as its plans buy them (before, its
    racks.<system> columns looked up the plans' system@site rows by system id: every variant showed 0 racks of
    every system, and the summary said "in the plan: no system")."""
    from planner.sweep.report import summary_lines
    from planner.sweep.run import run_sweep

    base = scenario_with(SMALL.replace("8000", "300"), sites=[{"name": "a", "power_budget_mw": 0.1},
                                                              {"name": "b", "power_budget_mw": 0.4}])
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(base.model_dump(mode="json", exclude_unset=True)))
    (tmp_path / "s.yaml").write_text("base: base.yaml\naxes:\n  - {path: workloads.0.requests_per_s, "
                                     "values: [300, 480]}\n")
    table = run_sweep(tmp_path / "s.yaml", workers=1, regret=False)
    racks = [c for c in table.columns if c.startswith("racks.")]
    assert racks and all("@" in c for c in racks), racks
    assert all(sum(row[c] for c in racks) > 0 for row in table.to_dicts())
    in_plan = next(line for line in summary_lines(table) if line.startswith("in the plan"))
    assert "@" in in_plan and "no system" not in in_plan, in_plan
