"""The what-ifs weigh a plan by its objective's own value (issue 44 item 4): under min_power a looser limit is
worth the watts it saves, whatever it does to the annual cost; under min_cost the dollars. Hand-computed, with the
re-solve replaced by the plan it would return."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from planner.fleet import whatif
from planner.fleet.plan import objective_value


@dataclass
class Solved:
    """The parts of a Plan the what-ifs read."""

    objective: str
    annual_cost_usd: float
    power_mw: float
    gap: float = 1e-4
    status: str = "optimal"
    solver: dict = field(default_factory=dict)

    def __post_init__(self):
        self.solver = {"relative_gap": self.gap}
        self.totals = {"annual_cost_usd": self.annual_cost_usd, "power_mw": self.power_mw,
                       "carbon_kg_co2e_per_year": None, "revenue_usd_per_year": 0.0, "facility_power_mw": self.power_mw}
        self.objective_usd_per_year = self.annual_cost_usd
        self.objective_value = objective_value(self.objective, self.totals)
        self.objective_unit = {"min_cost": "USD/year", "min_power": "W"}[self.objective]
        self.built = None


def test_a_looser_limit_under_min_power_is_worth_its_watts(monkeypatch):
    # the plan draws 1.0 MW IT for 100 USD a year; one more unit of the limit: 0.9 MW for 120 USD
    plan, looser = Solved("min_power", 100.0, 1.0), Solved("min_power", 120.0, 0.9)
    monkeypatch.setattr(whatif, "solve_again", lambda *a: looser)
    row = whatif.limit_row(plan, "one more rack of floor space", {})
    assert row["unit"] == "W" and row["worth"] == pytest.approx(1e5)  # 100 kW saved
    assert row["objective"] == pytest.approx(0.9e6)
    assert row["worth_usd_per_year"] == pytest.approx(-20.0)  # it costs more: reported, not the worth
    assert row["within_gap"] is False  # 10% of the objective, far above a 0.01% gap (the annual cost's would
    # have said 0, within the gap)


def test_a_looser_limit_under_min_cost_is_worth_its_dollars(monkeypatch):
    plan, looser = Solved("min_cost", 100.0, 1.0), Solved("min_cost", 99.999, 1.2)
    monkeypatch.setattr(whatif, "solve_again", lambda *a: looser)
    row = whatif.limit_row(plan, "one more MW of facility power", {})
    assert row["unit"] == "USD/year" and row["worth"] == pytest.approx(0.001)
    assert row["within_gap"] is True  # 0.001 of 100 USD: within the 1e-4 gap (0.01 USD)


def test_a_minor_system_under_min_power_saves_watts(monkeypatch):
    # without the system the plan draws 1.05 MW (50 kW more) but costs 5 USD less a year
    plan, alone = Solved("min_power", 100.0, 1.0), Solved("min_power", 95.0, 1.05)
    alone.fleet = type("Fleet", (), {"to_dicts": staticmethod(lambda: [{"racks": 3, "hardware": "hgx-b200"}])})()
    monkeypatch.setattr(whatif, "solve_again", lambda *a: alone)
    monkeypatch.setattr(whatif, "without_hardware", lambda built, hw: None)
    row = whatif.minor_row(plan, "hgx-h100", 1, 0.01)
    assert row["unit"] == "W" and row["saves"] == pytest.approx(5e4) and row["within_gap"] is False
    assert row["saves_usd_per_year"] == pytest.approx(-5.0)
    from planner.report.summary import minor_words
    assert "it saves 50 kW of IT power against the plan without it" in minor_words(row)
