"""Finance: what a rack costs a year and what served tokens earn (docs/OPTIMIZER.md 1, MODEL.md 8).

Plain numbers and arrays in, so that ``solve`` (from a scenario) and ``check`` (from a plan file) price a fleet with
the same formulas.
"""

from __future__ import annotations

import numpy as np

from planner.errors import InputError
from planner.perf.pack import rack_power_shares
from planner.vocabulary import HOURS_PER_YEAR, SECONDS_PER_YEAR


def capital_recovery_factor(wacc, horizon_years):
    """Share of capex paid each year to repay it over ``horizon_years`` at ``wacc``: wacc / (1 - (1 + wacc)^-n).

    wacc 0 gives 1 / n. Works elementwise on arrays.
    """
    wacc = np.asarray(wacc, dtype=float)
    n = np.asarray(horizon_years, dtype=float)
    safe = np.where(wacc == 0.0, 1.0, wacc)
    crf = np.where(wacc == 0.0, 1.0 / n, safe / (1.0 - (1.0 + safe) ** (-n)))
    return crf if crf.ndim else float(crf)


def facility_mwh_per_year(power_w, load_share, pue):
    """MWh a year the facility draws for ``power_w`` of IT load at ``load_share`` of the year: the one energy
    figure the bill (x USD/MWh) and the emissions (x kg CO2e/MWh) are priced on. Works elementwise on arrays."""
    return np.asarray(power_w, dtype=float) * load_share * pue * HOURS_PER_YEAR / 1e6


def annual_rack_cost_parts(capex_usd, power_w, wacc, horizon_years, maintenance_share, electricity_usd_per_mwh,
                           pue, load_share=1.0) -> dict:
    """USD per year of one rack, by part: capex annuity, maintenance (a share of capex a year) and facility energy
    (power_w x load_share x pue x 8760 h, billed at electricity_usd_per_mwh). Works elementwise on arrays."""
    capex = np.asarray(capex_usd, dtype=float)
    energy_mwh = facility_mwh_per_year(power_w, load_share, pue)
    return {
        "capex_annuity": capex * capital_recovery_factor(wacc, horizon_years),
        "maintenance": capex * maintenance_share,
        "energy": energy_mwh * electricity_usd_per_mwh,
    }


def annual_rack_cost(capex_usd, power_w, wacc, horizon_years, maintenance_share, electricity_usd_per_mwh, pue,
                     load_share=1.0):
    """USD per year of one rack: the sum of ``annual_rack_cost_parts``."""
    parts = annual_rack_cost_parts(capex_usd, power_w, wacc, horizon_years, maintenance_share,
                                   electricity_usd_per_mwh, pue, load_share)
    cost = parts["capex_annuity"] + parts["maintenance"] + parts["energy"]
    return cost if np.ndim(cost) else float(cost)


def finance_value(finance, key: str):
    """A field of a scenario's finance section, or of its dict (a plan file's)."""
    return finance.get(key) if isinstance(finance, dict) else getattr(finance, key)


def uses_power_curves(finance) -> bool:
    """Whether racks draw by the power curves (MODEL.md 14): unless the scenario bills a flat
    ``average_load_share`` of design power."""
    return finance_value(finance, "average_load_share") is None


def finance_args(finance, horizon_years: float) -> dict:
    """The finance terms of ``annual_rack_cost_parts`` from a scenario's finance section (or its dict); with the
    power curves the rack's floor is billed whole (``load_share`` 1: ``billed_power_w`` gives that floor)."""
    def get(key):
        return finance_value(finance, key)

    return {"wacc": get("wacc"), "horizon_years": horizon_years,
            "maintenance_share": get("maintenance_share_of_capex_per_year"),
            "electricity_usd_per_mwh": get("electricity_usd_per_mwh"), "pue": get("pue"),
            "load_share": 1.0 if uses_power_curves(finance) else get("average_load_share")}


def idle_power_w(hw) -> float:
    """IT watts of a rack of ``hw`` doing no work, its models loaded (MODEL.md 14)."""
    return rack_power_shares(hw)[0] * hw.rack_power_w


def billed_power_w(hw, finance) -> float:
    """The power a rack's own energy bill is charged on: its idle floor under the power curves (each replica's
    draw above it is billed with the replica, OPTIMIZER.md 12), else its design power (at ``average_load_share``)."""
    return idle_power_w(hw) if uses_power_curves(finance) else hw.rack_power_w


def replica_energy_usd(above_w, mean_load, finance) -> float:
    """USD/year of a replica's draw ``above_w`` beyond its chips' floor, working ``mean_load`` of the year (its
    workload's mean over the capacity it holds: 1 / (peak_to_mean x (1 + headroom)))."""
    return float(facility_mwh_per_year(above_w, mean_load, finance_value(finance, "pue"))
                 * finance_value(finance, "electricity_usd_per_mwh"))


def rack_cost_parts(scenario, hw) -> dict:
    """USD per year of one rack of ``hw`` under the scenario's finance: capex annuity, maintenance, energy."""
    parts = annual_rack_cost_parts(hw.rack.capex_usd.value, billed_power_w(hw, scenario.finance),
                                   **finance_args(scenario.finance, scenario.horizon_years))
    return {k: float(v) for k, v in parts.items()}


def kept_rack_cost_parts(capex_usd, power_w, wacc, horizon_years, maintenance_share, electricity_usd_per_mwh, pue,
                         load_share=1.0) -> dict:
    """USD per year of keeping an installed rack in service (OPTIMIZER.md 9): its maintenance and energy as
    ``annual_rack_cost_parts`` gives them, its capex sunk (no annuity)."""
    parts = annual_rack_cost_parts(capex_usd, power_w, wacc, horizon_years, maintenance_share,
                                   electricity_usd_per_mwh, pue, load_share)
    return {"capex_annuity": 0.0 * parts["capex_annuity"], "maintenance": parts["maintenance"],
            "energy": parts["energy"]}


def installed_rack_cost_parts(scenario, hw, capex_usd: float) -> dict:
    """``kept_rack_cost_parts`` of one installed rack of ``hw`` bought at ``capex_usd``, under the scenario's
    finance."""
    parts = kept_rack_cost_parts(capex_usd, billed_power_w(hw, scenario.finance),
                                 **finance_args(scenario.finance, scenario.horizon_years))
    return {k: float(v) for k, v in parts.items()}


# ---- emissions (min_carbon, docs/OPTIMIZER.md 15) -------------------------------------------------------------
def rack_carbon_parts(embodied_kg: float, power_w: float, horizon_years: float, grid_kg_per_mwh: float, pue: float,
                      load_share: float = 1.0) -> dict:
    """kg CO2e a year of one rack, by part: its making spread evenly over the horizon (``embodied``) and the grid's
    emissions of its billed facility energy (``energy``: power_w x load_share x pue x 8760 h at grid_kg_per_mwh)."""
    return {"embodied": float(embodied_kg) / float(horizon_years),
            "energy": float(facility_mwh_per_year(power_w, load_share, pue)) * float(grid_kg_per_mwh)}


def rack_carbon_kg(hw, finance, horizon_years: float, grid_kg_per_mwh: float) -> dict:
    """``rack_carbon_parts`` of one rack of ``hw`` under a scenario's finance section (or a plan's dict of it): the
    energy on the same billed power as its cost (the idle floor under the power curves); its making 0 where the
    catalog has no figure (min_carbon refuses such a system, scenario validation)."""
    embodied = hw.rack.embodied_kg_co2e.value if hw.rack.embodied_kg_co2e is not None else 0.0
    args = finance_args(finance, horizon_years)
    return rack_carbon_parts(embodied, billed_power_w(hw, finance), horizon_years, grid_kg_per_mwh, args["pue"],
                             args["load_share"])


def replica_carbon_kg(above_w, mean_load, finance, grid_kg_per_mwh: float) -> float:
    """kg CO2e a year of a replica's draw ``above_w`` beyond its chips' floor at ``mean_load`` (as
    ``replica_energy_usd``, at the grid's emissions instead of its price)."""
    return float(facility_mwh_per_year(above_w, mean_load, finance_value(finance, "pue"))) * grid_kg_per_mwh


def rental_cost(chips: float, usd_per_chip_hour: float) -> float:
    """USD a year of rented chips: every hour of the year paid (OPTIMIZER.md 11)."""
    return float(chips) * usd_per_chip_hour * HOURS_PER_YEAR


def annual_costs(scenario, hardware: list) -> np.ndarray:
    """USD per year of one rack of each system (the MILP's cost coefficients)."""
    args = finance_args(scenario.finance, scenario.horizon_years)
    costs = np.array([annual_rack_cost(hw.rack.capex_usd.value, billed_power_w(hw, scenario.finance), **args)
                      for hw in hardware])
    free = [hw.id for hw, c in zip(hardware, costs) if not c > 0]
    if free:  # issue 28: reached the MILP as an invalid FleetProblem (its costs must be > 0)
        raise InputError(f"{', '.join(free)} would cost nothing a year (capex_usd 0 and electricity free): every "
                         f"fleet of free racks is equally cheap; give it a capex_usd or an electricity price",
                         field="hardware")
    return costs


def mean_tokens_per_year(peak_output_tokens_per_s: float, peak_to_mean: float) -> float:
    """Output tokens a year at the mean rate: peak tokens/s / peak-to-mean x a year."""
    return peak_output_tokens_per_s / peak_to_mean * SECONDS_PER_YEAR


def annual_revenue(peak_output_tokens_per_s: float, peak_to_mean: float, price_usd_per_mtok: float | None) -> float:
    """USD/year if the whole demand is served: mean output tokens/s x a year x price per million (0 unpriced)."""
    return peak_output_tokens_per_s / peak_to_mean * SECONDS_PER_YEAR / 1e6 * (price_usd_per_mtok or 0.0)


def usd_per_mtok(annual_cost_usd: float, tokens_per_year: float) -> float | None:
    """Cost per million output tokens; None when nothing is served."""
    return annual_cost_usd / (tokens_per_year / 1e6) if tokens_per_year > 0 else None


def annuity_factor(wacc: float, years: float) -> float:
    """Present value at year 0 of 1 USD a year paid over [0, years): (1 - (1 + wacc)^-years) / wacc (years at
    wacc 0). 1 / capital_recovery_factor for whole lives."""
    if years <= 0:
        return 0.0
    return float(years) if wacc == 0 else float((1.0 - (1.0 + wacc) ** (-years)) / wacc)


def present_rack_cost(capex_usd: float, power_w: float, bought_year: float, life_years: float, horizon_years: float,
                      wacc: float, maintenance_share: float, electricity_usd_per_mwh: float, pue: float,
                      load_share: float = 1.0) -> float:
    """Present value (at the first period) of one rack bought ``bought_year`` years in: its capex annuity over its
    service life, maintenance and energy, each year it serves within the horizon (OPTIMIZER.md 7.1). Charging the
    capex as an annuity is paying it when bought less the value left at the horizon's end, so a rack bought late is
    not charged for the years it would serve after the plan ends. Bought at 0 with a life of the horizon, it is
    annuity_factor(horizon) x annual_rack_cost: the single-period objective times a constant."""
    parts = annual_rack_cost_parts(capex_usd, power_w, wacc, life_years, maintenance_share, electricity_usd_per_mwh,
                                   pue, load_share)
    yearly = float(parts["capex_annuity"] + parts["maintenance"] + parts["energy"])
    end = min(bought_year + life_years, horizon_years)
    return yearly * (annuity_factor(wacc, end) - annuity_factor(wacc, bought_year))
