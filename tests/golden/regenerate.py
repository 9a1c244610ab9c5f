"""Regenerate the golden plan figures of the shipped scenarios: `python tests/golden/regenerate.py`.

Run it only after reviewing why a plan changed; the diff of these files is the review. Each whole plan goes to
plans/NAME.json too: the engines' own parsers judge its export (tests/test_engines_accept.py), and
tests/test_export.py checks that it still exports what a fresh solve does.
"""

import json
from pathlib import Path

from planner.fleet.solve import solve
from planner.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]

PLANS = Path(__file__).parent / "plans"
PLANS.mkdir(exist_ok=True)
for path in sorted((ROOT / "scenarios").glob("*.yaml")):
    plan = solve(load_scenario(path))
    (PLANS / f"{path.stem}.json").write_text(json.dumps(plan.to_dict(), indent=1, sort_keys=True) + "\n")
    if getattr(plan, "is_buildout", False):
        d = plan.to_dict()
        golden = {"status": plan.status, "net_present_cost_usd": d["net_present_cost_usd"],
                  "first_period_order": {r["hardware"]: r["racks"] for r in d["first_period_order"]}}
        (Path(__file__).parent / f"{path.stem}.json").write_text(json.dumps(golden, indent=2) + "\n")
        print(path.stem, golden)
        continue
    golden = {
        "status": plan.status,
        "objective_usd_per_year": plan.objective_usd_per_year,
        "racks": {r["hardware"]: r["racks"] for r in plan.fleet.to_dicts()},
        "facility_power_mw": plan.totals["facility_power_mw"],
    }
    (Path(__file__).parent / f"{path.stem}.json").write_text(json.dumps(golden, indent=2) + "\n")
    print(path.stem, golden)
