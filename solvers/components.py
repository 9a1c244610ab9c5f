"""The fleet problem as component tables (docs/OPTIMIZER.md 23), as PyPSA keeps a network: a table per kind of
component, a row per component, and a price table per measure. :func:`compiled` turns the tables into the MILP's
arrays (``solvers.milp.FleetProblem``); :func:`concatenated` puts several sites' tables into one, so that a site adds
rows (its racks, its columns, their chips on its own racks, its limits), not code.

Tables (each a mapping of column name -> 1-D numpy array, one entry per row):

  racks    [H] a hardware type, a system at a site: chips_per_rack, rack_power_w (design IT power), max_racks (supply
               cap, inf none), min_racks (a system's minimum purchase), racks_at_least (kept), installed_racks, site
               (its row in ``sites``), system (its system's number: types of one system share its cap and minimum)
  columns  [J] a deployment option: workload (its main demand row), capacity (units of that row a replica serves),
               integer_replicas, pool (the replica pool it joins, -1 none)
  uses     [N] a (column, rack) pair whose replica holds chips of that type: column, rack, chips (row (2)),
               core_chips (row (2c); 0 where none)
  covers   [M] a (column, row) pair a replica serves: column, row, units
  rentals  [R] a rental offer on one type: rack, max_chips, offer (its offer's number: one offer rented at several
               sites, its system's type at each, shares its max_chips over them; absent: each row its own offer)
  sites    [S] a site: pue, power_budget_w (facility, inf none), max_racks (inf none)
  rows     [W] a demand row: demand, group (the sold good it belongs to: max_revenue, max_served)
  groups   [G] a sold good: value (USD a year served whole, or max_served's weight)
  limits       over the plan: max_platforms, max_new_racks (inf none)

and ``prices``: one :class:`Prices` per measure the objectives price a plan in (``PRICE_TABLES``): what a rack
bought, an installed rack kept, a replica (beyond its racks' floor) and a rented chip add to that measure a year.
An objective (``solvers.objectives``) picks its table by measure, and its tie-break another.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from solvers.milp import FleetProblem
from solvers.objectives import PRICE_TABLES, Prices

RACKS = ("chips_per_rack", "rack_power_w", "max_racks", "min_racks", "racks_at_least", "installed_racks", "site",
         "system")
COLUMNS = ("workload", "capacity", "integer_replicas", "pool")
USES = ("column", "rack", "chips", "core_chips")
COVERS = ("column", "row", "units")
RENTALS = ("rack", "max_chips", "offer")
SITES = ("pue", "power_budget_w", "max_racks")
ROWS = ("demand", "group")
GROUPS = ("value",)


def table(names: tuple, **columns) -> dict:
    """A table of ``names``, each column (from ``columns``) an array of one length."""
    out = {name: np.asarray(columns[name]) for name in names}
    sizes = {len(v) for v in out.values()}
    if len(sizes) > 1:
        raise ValueError(f"table of {', '.join(names)}: columns of lengths {sorted(sizes)}, expected one length")
    return out


def n_rows(t: dict) -> int:
    return int(len(next(iter(t.values())))) if t else 0


@dataclass(frozen=True, eq=False)
class Components:
    """The problem as tables (module docstring); :func:`compiled` gives its MILP."""

    racks: dict
    columns: dict
    uses: dict
    covers: dict
    rentals: dict
    sites: dict
    rows: dict
    groups: dict
    limits: dict
    prices: dict  # measure (PRICE_TABLES) -> Prices
    objective: str = "min_cost"

    @property
    def n_racks(self) -> int:
        return n_rows(self.racks)

    @property
    def n_columns(self) -> int:
        return n_rows(self.columns)


def matrix(pairs: dict, value: str, shape: tuple, row: str, col: str) -> np.ndarray:
    """A dense [rows, cols] matrix of a long table's ``value`` at (``row``, ``col``) (pairs summed)."""
    out = np.zeros(shape)
    np.add.at(out, (np.asarray(pairs[row], dtype=np.int64), np.asarray(pairs[col], dtype=np.int64)),
              np.asarray(pairs[value], dtype=float))
    return out


def long_table(dense: np.ndarray, names: tuple, extra: dict | None = None) -> dict:
    """The nonzero entries of a [J, K] matrix as a long table (``names``: the row index, the column index, the value),
    with ``extra`` matrices' entries at the same places."""
    j, k = np.nonzero(dense)
    out = {names[0]: j.astype(np.int64), names[1]: k.astype(np.int64), names[2]: dense[j, k]}
    for name, values in (extra or {}).items():
        out[name] = values[j, k]
    return out


def given(prices: Prices | None, part: str):
    """A price table's ``part`` (rack, kept, rent) where the table and the part are given, else None."""
    return None if prices is None else getattr(prices, part)


def compiled(c: Components) -> FleetProblem:
    """The MILP's arrays of the tables (solvers.milp's formulation; one site's fields where there is one site)."""
    H, J, W = c.n_racks, c.n_columns, n_rows(c.rows)
    chips = matrix(c.uses, "chips", (J, H), "column", "rack")
    core = matrix(c.uses, "core_chips", (J, H), "column", "rack")
    pool = np.asarray(c.columns["pool"], dtype=np.int64)
    cost, power, carbon = (c.prices.get(m) for m in PRICE_TABLES)
    if cost is None:
        raise ValueError("the annual_cost_usd price table is required (every rack has a price)")
    one = n_rows(c.sites) == 1
    sites = {name: np.asarray(c.sites[name], dtype=float) for name in SITES}
    several = {} if one else dict(rack_site=c.racks["site"], site_pue=sites["pue"],
                                  site_power_budget_w=sites["power_budget_w"], site_max_racks=sites["max_racks"])
    return FleetProblem(
        chips_per_rack=c.racks["chips_per_rack"], rack_power_w=c.racks["rack_power_w"],
        annual_cost_usd_per_rack=cost.rack, max_racks=c.racks["max_racks"], workload=c.columns["workload"],
        capacity=c.columns["capacity"], chips=chips, integer_replicas=c.columns["integer_replicas"],
        demand=c.rows["demand"], coverage=matrix(c.covers, "units", (J, W), "column", "row"),
        row_group=c.rows["group"], group_value=c.groups["value"],
        pue=float(sites["pue"][0]) if one else 1.0,
        power_budget_w=float(sites["power_budget_w"][0]) if one else math.inf,
        max_total_racks=float(sites["max_racks"][0]) if one else math.inf,
        max_platforms=float(c.limits["max_platforms"]), max_new_racks=float(c.limits["max_new_racks"]),
        min_racks=c.racks["min_racks"], racks_at_least=c.racks["racks_at_least"],
        installed_racks=c.racks["installed_racks"], installed_annual_cost_usd_per_rack=cost.kept,
        column_cost_usd=cost.column.get("own"), column_energy_usd=cost.column.get("energy"),
        rent_hardware=c.rentals["rack"], rent_cost_usd_per_chip=cost.rent,
        rent_max_chips=c.rentals["max_chips"], rent_offer=offer_numbers(c.rentals),
        rack_idle_power_w=given(power, "rack"), column_power_w=None if power is None else power.column.get("draw"),
        carbon_kg_per_rack=given(carbon, "rack"), installed_carbon_kg_per_rack=given(carbon, "kept"),
        column_carbon_kg=None if carbon is None else carbon.column.get("energy"),
        rent_carbon_kg_per_chip=given(carbon, "rent"),
        pool=pool if np.any(pool >= 0) else None, core_chips=core if np.any(core > 0) else None,
        objective=c.objective,
        rack_system=None if one and np.array_equal(c.racks["system"], np.arange(H)) else c.racks["system"],
        **several)


def offer_numbers(rentals: dict) -> np.ndarray | None:
    """[R] each rental's offer, where the table says and an offer is rented on more than one type (else None: each
    row its own offer, the one-site problem as it was)."""
    offer = rentals.get("offer")
    if offer is None or len(np.unique(offer)) == len(offer):
        return None
    return np.asarray(offer, dtype=np.int64)


def offset(values, by: int) -> np.ndarray:
    """Indices moved by ``by``, -1 (none) kept."""
    v = np.asarray(values, dtype=np.int64)
    return np.where(v >= 0, v + by, -1)


def concatenated_prices(parts: list, sizes: list) -> dict:
    """Each measure's table over the parts: given where every part gives it, its parts in every part's order;
    a part's missing ``kept`` or column part filled by its default (a rack bought's price, zeros)."""
    out = {}
    for measure in PRICE_TABLES:
        tables = [p.prices.get(measure) for p in parts]
        if any(t is None for t in tables):
            continue
        if all(t.rack is None for t in tables):
            out[measure] = Prices(None)
            continue
        kept = (np.concatenate([t.rack if t.kept is None else t.kept for t in tables])
                if any(t.kept is not None for t in tables) else None)
        names = sorted({name for t in tables for name in t.column})
        column = {name: np.concatenate([t.column.get(name, np.zeros(n)) for t, n in zip(tables, sizes)])
                  for name in names}
        rent = (np.concatenate([t.rent if t.rent is not None else np.zeros(0) for t in tables])
                if any(t.rent is not None for t in tables) else None)
        out[measure] = Prices(np.concatenate([t.rack for t in tables]), kept, column, rent)
    return out


def concatenated(parts: list) -> Components:
    """One problem of several sites' (docs/OPTIMIZER.md 21): their racks, columns, uses, rentals and sites one after
    another (each part's indices moved past the parts before it: a column's chips on its own site's racks, pools
    numbered apart); the demand rows, groups, limits and objective the first part's (every part shares them)."""
    first = parts[0]
    racks = {name: np.concatenate([p.racks[name] for p in parts]) for name in RACKS}
    h0 = j0 = g0 = s0 = 0
    site, use_col, use_rack, cover_col, rent_rack, pool = [], [], [], [], [], []
    for p in parts:
        site.append(offset(p.racks["site"], s0))
        pool.append(offset(p.columns["pool"], g0))
        use_col.append(offset(p.uses["column"], j0))
        use_rack.append(offset(p.uses["rack"], h0))
        cover_col.append(offset(p.covers["column"], j0))
        rent_rack.append(offset(p.rentals["rack"], h0))
        g0 += int(np.max(p.columns["pool"], initial=-1)) + 1
        h0, j0, s0 = h0 + p.n_racks, j0 + p.n_columns, s0 + n_rows(p.sites)
    racks["site"] = np.concatenate(site)
    columns = {name: np.concatenate([p.columns[name] for p in parts]) for name in COLUMNS}
    columns["pool"] = np.concatenate(pool)
    return Components(
        racks=racks, columns=columns,
        uses=dict(column=np.concatenate(use_col), rack=np.concatenate(use_rack),
                  chips=np.concatenate([p.uses["chips"] for p in parts]),
                  core_chips=np.concatenate([p.uses["core_chips"] for p in parts])),
        covers=dict(column=np.concatenate(cover_col), row=np.concatenate([p.covers["row"] for p in parts]),
                    units=np.concatenate([p.covers["units"] for p in parts])),
        rentals=dict(rack=np.concatenate(rent_rack), max_chips=np.concatenate([p.rentals["max_chips"] for p in parts]),
                     **({"offer": np.concatenate([p.rentals["offer"] for p in parts])}  # numbered over all sites
                        if all("offer" in p.rentals for p in parts) else {})),
        sites={name: np.concatenate([p.sites[name] for p in parts]) for name in SITES},
        rows=first.rows, groups=first.groups, limits=first.limits,
        prices=concatenated_prices(parts, [p.n_columns for p in parts]), objective=first.objective)
