"""What a fleet draws from the site (docs/MODEL.md 14, OPTIMIZER.md 12): each allocation row's floor and its draw
above it, a system's racks at the peak and on average, and the draw of a fleet running below its peak (the
curtailment table, OPTIMIZER.md 13).

Plain rows (the allocation table's dicts) and catalog entries in, so that ``solve`` and ``check`` compute every
figure of power with the same code.
"""

from __future__ import annotations

from planner.fleet.finance import finance_value, idle_power_w, replica_energy_usd, uses_power_curves


def row_idle_mw(row: dict, hw) -> float:
    """MW the row's chips draw at rest (MODEL.md 14)."""
    return float(row["replicas"]) * row["chips_per_replica"] * idle_power_w(hw) / hw.chips_per_rack / 1e6


def mean_power_mw(row: dict, hw, demand, finance) -> float:
    """A row's mean draw (OPTIMIZER.md 12): its chips' floor, and its peak draw beyond it for the share of the year
    its replicas work (1 / (peak_to_mean x (1 + headroom))); at ``average_load_share`` of its peak draw where the
    scenario bills a flat share."""
    if not uses_power_curves(finance):
        return row["power_mw"] * float(finance_value(finance, "average_load_share"))
    idle = row_idle_mw(row, hw)
    return idle + (row["power_mw"] - idle) * demand.working_share


def peak_draw_mw(hw, racks: float, rows: list[dict], loads: list[float], finance) -> float:
    """MW one system's ``racks`` draw with each of its allocation ``rows`` working ``loads`` of its capacity: the
    floor of every rack powered plus each row's draw beyond its chips' floor, scaled by its load (the curve is
    linear in load between floor and peak, MODEL.md 14). Design power of the racks powered where the scenario bills
    a flat share (or has no finance section): a powered rack draws it whatever it does."""
    if finance is None or not uses_power_curves(finance):
        return racks * hw.rack_power_w / 1e6
    return racks * idle_power_w(hw) / 1e6 + sum(load * (r["power_mw"] - row_idle_mw(r, hw))
                                                for r, load in zip(rows, loads))


def site_draw(hw, racks: int, rows, finance) -> dict:
    """MW of one system's racks at the peak and on average (and the mean above the racks' floor), and USD a year of
    the energy its replicas draw above the
    racks' floor (OPTIMIZER.md 12, the MILP's (13)): the floor of every rack in service plus each row's draw beyond
    its chips' floor (a row on rented chips counted as if at the site). Design power (at average_load_share on
    average) where the scenario bills a flat share, or without a finance section."""
    mine = rows.to_dicts() if len(rows) else []
    peak = peak_draw_mw(hw, racks, mine, [1.0] * len(mine), finance)
    if finance is None or not uses_power_curves(finance):
        share = 1.0 if finance is None else float(finance_value(finance, "average_load_share"))
        return {"peak": peak, "mean": peak * share, "energy_usd": 0.0, "above_floor_mw": 0.0}
    floor = racks * idle_power_w(hw) / 1e6
    mean = floor + sum(r["mean_power_mw"] - row_idle_mw(r, hw) for r in mine)
    above = max(mean - floor, 0.0)  # the replicas' mean draw beyond the floor, billed (and emitted) with them
    return {"peak": peak, "mean": mean, "above_floor_mw": above,
            "energy_usd": replica_energy_usd(above * 1e6, 1.0, finance) if mean > floor else 0.0}
