"""docs/GTC2026.md and scenarios/gtc-2026-tiers.yaml: the shipped GTC 2026 tier scenario solves, and the page's
figures are the model's (recomputed from the frontier), so the page cannot drift from the model silently."""

import json
import re
from pathlib import Path

import pytest

from planner.fleet.solve import solve
from planner.perf.frontier import best_at_tiers, frontier
from planner.vocabulary import TIERS
from planner.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "GTC2026.md"
SCENARIO = ROOT / "scenarios" / "gtc-2026-tiers.yaml"
HARDWARE = ["hgx-h100", "hgx-h200", "gb200-nvl72", "vr-nvl72", "vr-nvl72+groq3-lpx"]


def doc_figures() -> dict:
    blocks = re.findall(r"```json\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) == 1, "docs/GTC2026.md must hold exactly one ```json block"
    return json.loads(blocks[0])


def test_scenario_solves_with_every_check_ok():
    plan = solve(load_scenario(SCENARIO))
    assert plan.status == "optimal"
    assert plan.checks and all(c["ok"] for c in plan.checks), [c for c in plan.checks if not c["ok"]]
    tiers = {w.tier for w in load_scenario(SCENARIO).workloads}
    assert tiers == {"standard", "high"}  # the tiers some allowed system reaches (next test)


def test_premium_and_ultra_stay_out_of_reach_of_plain_decoding():
    """The scenario decodes plainly (the keynote's comparison) and leaves premium and ultra out because no allowed
    system reaches them so on Kimi K2; with EAGLE at its published acceptance GB200 and VR NVL72 just reach premium
    (GTC2026.md) and nothing reaches ultra. When the model changes so that either moves, this fails and the scenario
    and the page should follow."""
    allowed = ["hgx-h100", "hgx-h200", "gb200-nvl72", "vr-nvl72", "groq3-lpx", "vr-nvl72+groq3-lpx"]
    plain = max(p["tps_per_user"] for p in frontier("kimi-k2", allowed, speculative="none"))
    assert 200 <= plain < 400, f"plain decoding's fastest point is {plain:.0f} tok/s per user"
    drafted = frontier("kimi-k2", allowed, speculative="eagle")
    premium = {p["hardware"] for p in drafted if p["tps_per_user"] >= 400}
    assert premium == {"gb200-nvl72", "vr-nvl72"}
    assert max(p["tps_per_user"] for p in drafted) < 1000


@pytest.mark.parametrize("condition", ["1000/1000", "8000/1000"])
def test_doc_figures_match_the_model(condition):
    documented = doc_figures()[condition]
    inp, out = (int(x) for x in condition.split("/"))
    rows = best_at_tiers(frontier("kimi-k2", HARDWARE, input_tokens=inp, output_tokens=out))
    model = {}
    for r in rows:
        model.setdefault(r["hardware"], {})[r["tier"]] = r["output_tokens_per_s_per_mw"]
    assert set(documented) == set(HARDWARE) == set(model)
    for hw in HARDWARE:
        assert set(documented[hw]) == set(TIERS)
        for tier in TIERS:
            doc, got = documented[hw][tier], model[hw][tier]
            if doc == 0:
                assert got == 0, f"{hw} {tier}: the page says no point reaches the tier, the model gives {got:.0f}"
            else:
                assert got == pytest.approx(doc, rel=0.01), f"{hw} {tier} ({condition})"


def test_doc_headline_ratios():
    """The ratios quoted in the claim-against-planner table follow from the figures block."""
    f = doc_figures()["1000/1000"]
    assert f["hgx-h100"]["standard"] == f["hgx-h200"]["standard"] == 0  # Hopper's plain limit is under 100
    assert f["vr-nvl72"]["standard"] / f["gb200-nvl72"]["standard"] == pytest.approx(3.70, abs=0.01)
    assert all(f[hw]["premium"] == 0 and f[hw]["ultra"] == 0 for hw in f)
