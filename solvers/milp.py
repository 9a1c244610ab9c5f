"""The fleet optimizer's core: a MILP over integer racks and replicas, arrays in, arrays out (docs/OPTIMIZER.md).

Three steps, each callable alone (as in PyPSA/linopy): :func:`build` turns a :class:`FleetProblem` into an OR-Tools
MathOpt model, :func:`solve` runs one solver on it, :func:`extract` reads the plan back as a :class:`FleetSolution`.
:func:`optimize` chains them. :func:`evaluate` recomputes every constraint and the objective from a plan alone,
without any solver; ``solvers.bruteforce`` finds the same optimum by enumeration on tiny problems.

The numbered formulation is below; ``solvers.formulation`` builds its rows (public builders that the robust fleet
shares), and ``solvers.backends`` holds the solvers as data and what every solve shares (parameters, status,
hints, stdout guard, interrupts, ``SolverError``).

The columns (deployment options) come from the candidate engine, which has already applied what does not fit the
arrays: hardware not available by the scenario's start date and model-locked hardware serving another model simply
have no column.
"""

# Formulation (docs/OPTIMIZER.md, section 1; the same numbers there)
# ------------------------------------------------------------------
# Index sets: hardware types h = 0..H-1, columns (deployment options) j = 0..J-1, workloads w = 0..W-1.
# Data: chips_per_rack_h, rack_power_w_h (IT), annual_cost_h (USD/year per rack, see annual_rack_cost),
#       max_racks_h (supply cap, inf = none); workload_j, capacity_j (demand units per replica), chips_jh (chips of
#       type h one replica of j uses), demand_w; pue, power_budget_w (facility), max_total_racks.
#
# Variables:
#   racks_h  integer, 0 <= racks_h <= R_h                              (racks of type h bought)
#   x_j      >= 0, <= X_j, integer where integer_replicas_j            (replicas of option j)
#
#   min   objective                                                    (O) below
#   s.t.
#   (1) sum_j coverage_jw x_j >= demand_w                               for each w with demand_w > 0
#       (coverage_jw = capacity_j if workload_j = w, else 0, unless a coverage matrix is given: a column may
#       then serve several demand rows, e.g. a colocated replica covers a workload's decode and prefill rows)
#   (2) sum_j chips_jh x_j <= chips_per_rack_h racks_h                   for each h
#   (2b) x_j <= X_j racks_h           for each j on h whose replica is under TINY_RACK_SHARE of a rack (no chip of
#       h rented): implied by (2) in exact arithmetic, it keeps a column off a type with no rack where (2)'s
#       activity is below the solvers' tolerances (solvers.formulation.add_use_rows)
#   (3) pue * sum_h rack_power_w_h racks_h <= power_budget_w             (only if the budget is finite)
#   (4) sum_h racks_h <= max_total_racks                                 (only if finite)
#   (5) implied bounds, which cut off no optimum (any plan can be shrunk to them at no extra cost):
#       X_j = max_w demand_w / coverage_jw over the rows j serves (rounded up if integer; 0 if it serves none with
#             demand; for CP-SAT, continuous X_j get 2 steps of its grid more, see cpsat_var_scaling)
#       R_h = min(max_racks_h, floor(power_budget_w / (pue rack_power_w_h)), max_total_racks,
#                 ceil(max(sum_j chips_jh X_j / chips_per_rack_h, min_racks_h where that need is > 0)))
#
#   (O) primary p_h:   min_cost: p_h = annual_cost_h;   min_power: p_h = rack_power_w_h (IT watts)
#       secondary q_h: min_cost: q_h = rack_power_w_h;  min_power: q_h = annual_cost_h
#       minimize  sum_h p_h racks_h                                                       (primary)
#               + D_R * sum_h (q_h / M) racks_h,  M = max_h q_h / p_h                     (tie-break 1: racks)
#               + D_X * sum_j (sum_h p_h chips_jh / chips_per_rack_h) x_j                 (tie-break 2: replicas)
#       with D_R = 1e-7, D_X = 1e-6 (a replica's tie coefficient, D_X x its rack share, must stay above SCIP's
#       epsilon of 1e-9: at 1e-8 SCIP's presolve called a plan twice the optimum "optimal"). Each tie term is at
#       most D * primary, so the solver's objective lies in
#       [primary, (1 + D_R + D_X) primary]: its plan is within 1.1e-6 (relative) of the primary optimum, and
#       dual_bound / (1 + D_R + D_X) is an honest lower bound on the primary optimum.
#
#   (8) a fleet topped up (racks_at_least given, e.g. a plan's racks tried on another variant): racks_h >= L_h;
#       R_h above takes max(need_h, L_h) in place of need_h. L_h > R_h (a cap below the kept racks) cannot hold:
#       solvers.robust.topped_up reports it infeasible before any solve.
#
#   (7) only with a platform limit or a minimum purchase: a binary used_h per hardware type,
#       racks_h <= R_h used_h;  racks_h >= min_racks_h used_h (where min_racks_h > 0);
#       sum_h used_h <= max_platforms (where finite). used_h = 1 with racks_h = 0 is allowed and costs nothing.
#
#   (T) tie-break among plans no worse than the first (only with fewest_platforms; docs/OPTIMIZER.md 3): after
#       (O) gives a plan of primary value V (less revenue under max_revenue), with used_h binaries as in (7),
#       (T1) P* = min sum_h used_h  s.t. (1)-(7), sum_h p_h racks_h (- sum_g value_g s_g) <= V
#            (an integer objective, proved with an absolute gap of 0.5, in at most TIE_TIME_FACTOR x (O)'s time);
#       (T2) if P* is below the first plan's types: (O) again s.t. (1)-(7), the same cap, sum_h used_h <= P*.
#       The bound reported stays (O)'s: T1 and T2 are restrictions, whose bounds say nothing of the whole.
#
#   (9) an installed fleet: installed_h racks already on the floor, their capex sunk, c'_h <= annual_cost_h a year to
#       keep one in service (energy, maintenance). racks_h is then the racks in service, and
#         new_h >= racks_h - installed_h,  new_h >= 0 integer                  (racks bought)
#         new_h <= max_racks_h (the supply cap is on purchases: racks_h <= max_racks_h + installed_h)
#         sum_h new_h <= max_new_racks                                         (only if finite; 0: the fleet alone)
#       and the primary of (O) becomes sum_h p'_h racks_h + (p_h - p'_h) new_h, p'_h the primary of c'_h. It is
#       convex in racks_h (p' <= p), so new_h = max(0, racks_h - installed_h) at every optimum, and
#       installed_h - min(racks_h, installed_h) installed racks retire: keeping them costs more than they save.
#       Without an installed fleet, new_h is racks_h itself (no variable; max_new_racks then bounds sum_h racks_h).
#
#  (11) columns with a cost of their own (a hosted API: capacity without racks): column_cost_j USD/year per replica,
#       chips_jh = 0 for all h. (O)'s primary adds sum_j c_j x_j with c_j = column_cost_j for the cost objectives
#       and 0 for min_power (such a column draws no site power). c_j = 0 (a free offer) is valid: (5) bounds x_j by
#       the demand its rows hold, so a column with neither chips nor a cost serves its demand and no more.
#
#  (12) rented capacity: offers r = 0..R-1, each on hardware h_r at rent_cost_r USD per chip-year, at most
#       rent_max_r chips. rent_r >= 0 (continuous chips, <= rent_max_r) adds to (2)'s right side:
#         sum_j chips_jh x_j <= chips_per_rack_h racks_h + sum_{r: h_r = h} rent_r
#       and sum_r rent_cost_r rent_r to (O)'s primary (0 under min_power: rented chips draw no site power, hold no
#       floor space and are no platform bought). An offer o rented at several sites (its system's type at each,
#       rent_offer) rents at most its limit over them all: sum_{r in o} rent_r <= rent_max_o (16).
#
#  (15) replica pools (OPTIMIZER.md 16): columns of one pool g (one model's replicas of one system, layout,
#       precision, drafter and tier, serving different workloads) are time shares of the same replicas: x_j
#       continuous for j in g, an integer y_g >= 0 with  sum_{j in g} x_j <= y_g,  and (2) charges g's chips on y_g
#       (the members' chips rows are equal) instead of on each x_j. The power row and energy stay on x_j (a share
#       of a replica works that share of the time). Without pools (pool_j = -1) nothing changes.
#
#  (16) several sites (OPTIMIZER.md 21): each hardware type h is a system k(h) at a site s(h) (rack_site,
#       rack_system; by default one site and each type its own system). (3) and (4) become one row per site s,
#         pue_s * (sum_{h at s} floor_h racks_h + sum_{j at s} above_j x_j) <= budget_s,  sum_{h at s} racks_h <= M_s,
#       a column standing at its types' one site (an API column at none); a system at several sites buys at most its
#       supply cap over them, sum_{h in k} new_h <= cap_k (cap_k: the largest of its types' max_racks, a type that
#       may not be bought at its site carrying 0); (7)'s used_k is per system, its minimum purchase
#       sum_{h in k} racks_h >= min_k used_k, and max_platforms counts systems.
#
#  (13) load-dependent power (OPTIMIZER.md 12, MODEL.md 14): a rack at rest draws idle_h <= rack_power_w_h, and
#       a replica of j at its peak operating point draws above_j more than its chips' share of that floor.
#       Row (3) holds the peak draw: pue * (sum_h idle_h racks_h + sum_j above_j x_j) <= power_budget_w, and R_h
#       divides the budget by pue idle_h. The energy bill follows the mean draw: annual_cost_h charges the floor's
#       energy, and energy_j USD/year per replica (its draw beyond the floor at the mean load) joins (11)'s c_j in
#       (O)'s primary; under min_power p_h = idle_h and c_j = above_j. Without idle_h (None) racks draw
#       rack_power_w_h always and above_j = energy_j = 0: the design-power model.
#
#   (6) max_revenue: share variables s_g in [0, 1] per sold good g (a workload's rows share one g); row (1)
#       becomes sum_j coverage_jw x_j >= s_{g(w)} demand_w, and the objective subtracts the revenue:
#       minimize  sum_h annual_cost_h racks_h - sum_g value_g s_g  (+ the tie terms), value_g = USD/year when g's
#       whole demand is served. Demand is then a ceiling on what is sold, and the power budget still binds.
#
#  (10) max_served (OPTIMIZER.md 1.4): two stages. (10a) (6) with value_g = SERVED_WEIGHT x C x weight_g / sum weight,
#       weight_g = group_value_g (the demand each group stands for) and C = sum_h p_h R_h, more than any plan costs:
#       every served unit is worth more than the whole fleet, so (10a) serves the most it can, cost aside.
#       (10b) min_cost on the demand (10a) serves (served_problem): the cheapest fleet that serves as much.
#
# Scaling (section 2): row (1) is divided by demand_w (coefficients coverage_jw / demand_w, right side 1); row (2)
# by chips_per_rack_h (coefficients are rack shares, racks_h's is -1); row (3) by pue * max_h rack_power_w_h
# (coefficients in (0, 1]); the objective by max_h p_h.

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np

from solvers import backends
# The solver machinery and the rows live in solvers.backends and solvers.formulation; their names stay importable
# from here (planner/ and the tests import SolverError, solver_output_to_stderr, solve_parameters ... from milp).
from solvers.backends import (CPSAT_MAX_BOUND, CPSAT_MAX_SCALING, MAX_SOLVE_SECONDS, MIN_SOLVE_SECONDS,  # noqa: F401
                              SolverError, cpsat_var_scaling, interruptible, solve_parameters, solver_key,
                              solver_output_to_stderr, solver_seconds, status_of)
from solvers.formulation import (DEFAULT, RACK_TIE, REPLICA_TIE, TIE_FACTOR, SiteTypes, add_chip_rows,  # noqa: F401
                                 add_demand_rows, add_new_racks, add_pools, pool_chip_replicas, add_objective_cap, add_platform_rows,
                                 add_offer_rows, add_power_row, add_rent_variables, add_supply_rows, add_total_racks_row, add_used,
                                 column_primary_coefficients, frozen, kept_primary_coefficients, limits_platforms,
                                 padded_replica_bounds, primary_coefficients, primary_terms, rack_tie_coefficients,
                                 rack_upper_bounds, rent_primary_coefficients, rent_upper_bounds,
                                 replica_tie_coefficients, replica_upper_bounds, rented_chips, secondary_coefficients,
                                 set_objective, systems_used)
from solvers.heuristic import RoundedPlan, rounded_values
from solvers.objectives import PRICE_TABLES, Prices
from solvers.objectives import objective as objective_named
from solvers.vocabulary import HAS_PLAN, OBJECTIVES, SOLVERS  # noqa: F401

SERVED_WEIGHT = 1e3  # (10a): the whole demand is worth this many times the most any plan can cost
TIE_TIME_FACTOR = 2.0  # (T1) may take this many times the first solve's time ...
TIE_MIN_SECONDS = 1.0  # ... or this, whichever is longer (within the time limit)
# The rounded LP plan (solvers.heuristic) is made for problems of this many columns or more: the shipped sites'
# MILPs (a few hundred columns) prove in about a second, and a search that finds no plan is a large one's risk.
ROUNDED_START_COLUMNS = 2000
EVAL_TOL = 1e-6  # evaluate(): a row is violated when its scaled slack is below -EVAL_TOL


# ---- the problem ----------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class FleetProblem(SiteTypes):
    """Everything the MILP needs, as numpy arrays and scalars (formulation at the top of this module)."""

    chips_per_rack: np.ndarray  # [H]
    rack_power_w: np.ndarray  # [H] IT power of one rack
    annual_cost_usd_per_rack: np.ndarray  # [H] see annual_rack_cost
    max_racks: np.ndarray  # [H] supply caps, inf = none
    workload: np.ndarray  # [J] int, the workload each column serves
    capacity: np.ndarray  # [J] demand units one replica serves
    chips: np.ndarray  # [J, H] chips of each type one replica uses
    integer_replicas: np.ndarray  # [J] bool
    demand: np.ndarray  # [W]
    pue: float = 1.0
    power_budget_w: float = math.inf  # facility power (rack power x pue)
    max_total_racks: float = math.inf
    objective: str = "min_cost"
    # DEFAULT (None): __post_init__ fills the field in from the others, so every built problem has the array
    coverage: np.ndarray = DEFAULT  # [J, W] demand units of row w one replica of j serves; default from
    # workload and capacity (one row per column)
    row_group: np.ndarray = DEFAULT  # [W] max_revenue: the sold good each demand row belongs to (default: own)
    group_value: np.ndarray = DEFAULT  # [G] max_revenue: USD/year for serving group g's whole demand
    max_platforms: float = math.inf  # (7) most hardware types bought, inf = any number
    min_racks: np.ndarray = DEFAULT  # [H] (7) fewest racks of a type bought if any is (0 = no minimum)
    racks_at_least: np.ndarray = DEFAULT  # [H] (8) racks already bought, kept (0 = none): a fleet topped up
    installed_racks: np.ndarray = DEFAULT  # [H] (9) racks on the floor, capex sunk (0 = none)
    installed_annual_cost_usd_per_rack: np.ndarray | None = None  # [H] (9) c'_h: a year of keeping one in service
    max_new_racks: float = math.inf  # (9) most racks bought, all types (inf = no limit)
    column_cost_usd: np.ndarray | None = None  # [J] (11) USD/year per replica beyond racks (0 = none)
    rent_hardware: np.ndarray = DEFAULT  # [R] (12) the hardware type each rental offer rents
    rent_cost_usd_per_chip: np.ndarray = DEFAULT  # [R] (12) USD a year per chip rented
    rent_max_chips: np.ndarray = DEFAULT  # [R] (12) most chips each offer rents (inf = no limit)
    rack_idle_power_w: np.ndarray | None = None  # [H] (13) IT watts of a rack doing no work (None: rack_power_w)
    column_power_w: np.ndarray | None = None  # [J] (13) IT watts a replica draws at peak beyond its chips' idle
    column_energy_usd: np.ndarray | None = None  # [J] (13) USD/year of that draw's energy at the mean load
    # (14) min_carbon's measures, kg CO2e a year (None where the scenario gives no grid intensity):
    carbon_kg_per_rack: np.ndarray | None = None  # [H] a rack bought: its making over its life + its floor's energy
    installed_carbon_kg_per_rack: np.ndarray | None = None  # [H] an installed rack kept: its floor's energy
    column_carbon_kg: np.ndarray | None = None  # [J] a replica's energy beyond the floor at the mean load
    rent_carbon_kg_per_chip: np.ndarray | None = None  # [R] a rented chip: its share of a rack's making and energy
    pool: np.ndarray | None = None  # [J] (15) the replica pool each column's replicas join, -1 for none
    core_chips: np.ndarray | None = None  # [J, H] (2c) the chips of a replica's stages wider than its domains'
    # tails, counted in their domains' cores and scaled to rack chips (None: no such row; docs/OPTIMIZER.md 17)
    # (16) several sites (OPTIMIZER.md 21): a hardware type is a system at one site; each site has its own power
    # budget, PUE and rack limit, and a system's supply cap, minimum purchase and platform count span its sites
    # None: one site, whose figures are the scalars above (left None, so that dataclasses.replace of a scalar
    # carries no stale copy); read them through the properties rack_sites ... rack_systems
    rack_site: np.ndarray | None = None  # [H] the site each hardware type stands at (default: all at site 0)
    site_pue: np.ndarray | None = None  # [S] (default: [pue])
    site_power_budget_w: np.ndarray | None = None  # [S] facility power, inf = none (default: [power_budget_w])
    site_max_racks: np.ndarray | None = None  # [S] inf = no limit (default: [max_total_racks])
    rack_system: np.ndarray | None = None  # [H] the system each type is; types of one system share its max_racks
    # and min_racks (each member carries the system's value) and count as one platform (default: each its own)
    rent_offer: np.ndarray | None = None  # [R] the offer each rental is: one offer rented at several sites (its
    # system's types there) rents at most its rent_max_chips over them all (default: each rental its own offer)

    def __post_init__(self):
        if self.coverage is None:
            cov = np.zeros((len(self.workload), len(self.demand)))
            if len(self.workload):
                cov[np.arange(len(self.workload)), np.asarray(self.workload, dtype=np.int64)] = self.capacity
            object.__setattr__(self, "coverage", cov)
        object.__setattr__(self, "coverage", frozen(self.coverage, float))
        if self.row_group is None:
            object.__setattr__(self, "row_group", np.arange(len(self.demand)))
        object.__setattr__(self, "row_group", frozen(self.row_group, np.int64))
        if self.group_value is None:
            object.__setattr__(self, "group_value", np.zeros(int(self.row_group.max(initial=-1)) + 1))
        object.__setattr__(self, "group_value", frozen(self.group_value, float))
        for name, dtype in (("chips_per_rack", float), ("rack_power_w", float), ("annual_cost_usd_per_rack", float),
                            ("max_racks", float), ("workload", np.int64), ("capacity", float), ("chips", float),
                            ("integer_replicas", bool), ("demand", float)):
            object.__setattr__(self, name, frozen(getattr(self, name), dtype))
        if self.core_chips is not None:
            object.__setattr__(self, "core_chips", frozen(self.core_chips, float))
        if self.pool is not None:  # None: no pools (left None so that dataclasses.replace of the columns carries none)
            object.__setattr__(self, "pool", frozen(self.pool, np.int64))
        if self.min_racks is None:
            object.__setattr__(self, "min_racks", np.zeros(len(self.chips_per_rack)))
        object.__setattr__(self, "min_racks", frozen(self.min_racks, float))
        if self.racks_at_least is None:
            object.__setattr__(self, "racks_at_least", np.zeros(len(self.chips_per_rack)))
        object.__setattr__(self, "racks_at_least", frozen(self.racks_at_least, float))
        for name in ("column_cost_usd", "rack_idle_power_w", "column_power_w", "column_energy_usd",
                     "carbon_kg_per_rack", "installed_carbon_kg_per_rack", "column_carbon_kg",
                     "rent_carbon_kg_per_chip"):
            if getattr(self, name) is not None:  # None: the default (left None, as (9)'s costs)
                object.__setattr__(self, name, frozen(getattr(self, name), float))
        for name, dtype in (("rent_hardware", np.int64), ("rent_cost_usd_per_chip", float), ("rent_max_chips", float)):
            value = getattr(self, name)
            object.__setattr__(self, name, frozen(np.zeros(0) if value is None else value, dtype))
        if self.installed_racks is None:
            object.__setattr__(self, "installed_racks", np.zeros(len(self.chips_per_rack)))
        object.__setattr__(self, "installed_racks", frozen(self.installed_racks, float))
        if self.installed_annual_cost_usd_per_rack is not None:  # None: a new rack's (left None so that
            # dataclasses.replace of the costs carries no stale copy)
            object.__setattr__(self, "installed_annual_cost_usd_per_rack",
                               frozen(self.installed_annual_cost_usd_per_rack, float))
        for name in ("pue", "power_budget_w", "max_total_racks", "max_platforms", "max_new_racks"):
            object.__setattr__(self, name, float(getattr(self, name)))
        for name, dtype in (("rack_site", np.int64), ("site_pue", float), ("site_power_budget_w", float),
                            ("site_max_racks", float), ("rack_system", np.int64), ("rent_offer", np.int64)):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, frozen(getattr(self, name), dtype))
        problems = list(self._problems())
        if problems:
            raise ValueError("invalid FleetProblem: " + "; ".join(problems))

    def _problems(self):  # noqa: C901
        H, J, W = self.n_hardware, self.n_columns, self.n_workloads
        for name in ("rack_power_w", "annual_cost_usd_per_rack", "max_racks"):
            if getattr(self, name).shape != (H,):
                yield f"{name} has shape {getattr(self, name).shape}, expected ({H},) like chips_per_rack"
        for name in ("workload", "capacity", "integer_replicas"):
            if getattr(self, name).shape != (J,):
                yield f"{name} has shape {getattr(self, name).shape}, expected ({J},) (one per column)"
        if self.chips.shape != (J, H):
            yield f"chips has shape {self.chips.shape}, expected ({J}, {H}) (columns x hardware types)"
            return
        core = self.core_chips
        if core is not None and (core.shape != (J, H) or not np.all(np.isfinite(core) & (core >= 0))):
            yield f"core_chips must be finite, >= 0 and of shape ({J}, {H}) like chips"
        if self.demand.ndim != 1:
            yield f"demand must be 1-D, got shape {self.demand.shape}"
        if self.coverage.shape != (J, len(self.demand)):
            yield f"coverage has shape {self.coverage.shape}, expected ({J}, {len(self.demand)})"
            return
        if not np.all(np.isfinite(self.coverage) & (self.coverage >= 0)):
            yield "coverage must be finite and >= 0"
        checks = (
            ("chips_per_rack", self.chips_per_rack, lambda a: np.isfinite(a) & (a > 0), "finite and > 0"),
            ("rack_power_w", self.rack_power_w, lambda a: np.isfinite(a) & (a > 0), "finite and > 0"),
            ("annual_cost_usd_per_rack", self.annual_cost_usd_per_rack, lambda a: np.isfinite(a) & (a > 0),
             "finite and > 0"),
            ("max_racks", self.max_racks, lambda a: a >= 0, ">= 0 (inf = no cap)"),
            ("capacity", self.capacity, lambda a: np.isfinite(a) & (a >= 0), "finite and >= 0"),
            ("chips", self.chips, lambda a: np.isfinite(a) & (a >= 0), "finite and >= 0"),
            ("demand", self.demand, lambda a: np.isfinite(a) & (a >= 0), "finite and >= 0"),
        )
        for name, arr, ok, what in checks:
            bad = np.argwhere(~ok(arr))
            if len(bad):
                yield f"{name}{list(bad[0])} = {arr[tuple(bad[0])]!r}, expected {what}"
        if J and (self.workload.min() < 0 or self.workload.max() >= W):
            yield f"workload indices must lie in 0..{W - 1}"
        own = self.own_cost_usd
        if own.shape != (J,) or not np.all(np.isfinite(own) & (own >= 0)):
            yield f"column_cost_usd must be {J} finite values >= 0"
            return
        for name, arr, size in (("column_power_w", self.replica_power_w, J), ("column_energy_usd",
                                                                              self.replica_energy_usd, J),
                                ("rack_idle_power_w", self.floor_power_w, H)):
            if arr.shape != (size,) or not np.all(np.isfinite(arr) & (arr >= 0)):
                yield f"{name} must be {size} finite values >= 0"
                return
        if np.any(self.floor_power_w > self.rack_power_w * (1 + 1e-12)):
            yield "rack_idle_power_w exceeds rack_power_w: a rack at rest draws no more than its design power (13)"
        if not (math.isfinite(self.pue) and self.pue > 0):
            yield f"pue = {self.pue!r}, expected finite and > 0"
        if self.min_racks.shape != (H,) or not np.all(np.isfinite(self.min_racks) & (self.min_racks >= 0)):
            yield f"min_racks must be {H} finite values >= 0"
        if self.racks_at_least.shape != (H,) or not np.all(np.isfinite(self.racks_at_least)
                                                           & (self.racks_at_least >= 0)
                                                           & (self.racks_at_least == np.rint(self.racks_at_least))):
            yield f"racks_at_least must be {H} whole numbers >= 0"
        if self.installed_racks.shape != (H,) or not np.all(np.isfinite(self.installed_racks)
                                                            & (self.installed_racks >= 0)
                                                            & (self.installed_racks == np.rint(self.installed_racks))):
            yield f"installed_racks must be {H} whole numbers >= 0"
        kept = self.kept_annual_cost_usd_per_rack
        if kept.shape != (H,) or not np.all(np.isfinite(kept) & (kept >= 0)):
            yield f"installed_annual_cost_usd_per_rack must be {H} finite values >= 0"
        elif kept.shape == self.annual_cost_usd_per_rack.shape and np.any(kept > self.annual_cost_usd_per_rack):
            h = int(np.argmax(kept > self.annual_cost_usd_per_rack))
            yield (f"installed_annual_cost_usd_per_rack[{h}] = {kept[h]!r} exceeds annual_cost_usd_per_rack[{h}]: "
                   f"keeping a rack never costs more than buying one (9)")
        R = len(self.rent_hardware)
        if self.rent_cost_usd_per_chip.shape != (R,) or self.rent_max_chips.shape != (R,):
            yield f"rent_cost_usd_per_chip and rent_max_chips must have one value per rental offer ({R})"
        elif R and (self.rent_hardware.min() < 0 or self.rent_hardware.max() >= H
                    or not np.all(np.isfinite(self.rent_cost_usd_per_chip) & (self.rent_cost_usd_per_chip > 0))
                    or not np.all(self.rent_max_chips >= 0)):
            yield f"rental offers need a hardware index in 0..{H - 1}, a cost > 0 and a chip limit >= 0"
        if not self.max_new_racks >= 0:
            yield f"max_new_racks = {self.max_new_racks!r}, expected >= 0 (inf = no limit)"
        if not self.max_platforms >= 0:
            yield f"max_platforms = {self.max_platforms!r}, expected >= 0 (inf = no limit)"
        if not self.power_budget_w > 0:
            yield f"power_budget_w = {self.power_budget_w!r}, expected > 0 (inf = no budget)"
        if not self.max_total_racks >= 0:
            yield f"max_total_racks = {self.max_total_racks!r}, expected >= 0 (inf = no limit)"
        if self.pool is not None and (self.pool.shape != (J,) or np.any(self.pool < -1)):
            yield f"pool must be {J} pool indices >= 0, or -1 for a column in no pool (15)"
        else:
            for members in self.pools:
                if np.any(self.chips[members] != self.chips[members[0]]):
                    yield f"pool of columns {members.tolist()}: its members must use the same chips (15)"
        yield from self._site_problems()
        if self.objective not in OBJECTIVES:
            yield f"objective = {self.objective!r}, expected one of {', '.join(OBJECTIVES)}"
        elif self.objective == "min_carbon" or self.carbon_kg_per_rack is not None:
            yield from self._carbon_problems(self.objective == "min_carbon")

    def _site_problems(self):
        """(16): one site index per type within the sites' arrays, each site's limits valid, and the types of one
        system carrying one supply cap and one minimum purchase."""
        H, S = self.n_hardware, len(self.site_pues)
        if self.rack_sites.shape != (H,) or self.rack_systems.shape != (H,):
            yield f"rack_site and rack_system must have one value per hardware type ({H})"
            return
        if H and (self.rack_sites.min() < 0 or self.rack_sites.max() >= S):
            yield f"rack_site must lie in 0..{S - 1} (one entry of site_pue per site)"
        if self.site_budgets_w.shape != (S,) or self.site_rack_limits.shape != (S,):
            yield f"site_power_budget_w and site_max_racks must have one value per site ({S})"
            return
        if not np.all(np.isfinite(self.site_pues) & (self.site_pues > 0)):
            yield "site_pue must be finite and > 0"
        if not np.all(self.site_budgets_w > 0):
            yield "site_power_budget_w must be > 0 (inf = no budget)"
        if not np.all(self.site_rack_limits >= 0):
            yield "site_max_racks must be >= 0 (inf = no limit)"
        if H and self.rack_systems.min() < 0:
            yield "rack_system must be >= 0"
        if H and self.chips.shape == (self.n_columns, H):
            on = self.chips > 0
            sites = np.where(on, self.rack_sites[None, :], -1)
            spans = np.flatnonzero(on.any(axis=1) & (sites.max(axis=1) != np.where(on, sites, S).min(axis=1)))
            if len(spans):
                yield f"column {int(spans[0])} uses hardware types at two sites: a replica stands at one (16)"
        for members in self.systems:
            least = self.min_racks
            if least.shape == (H,) and np.any(least[members] != least[members[0]]):
                yield f"min_racks of types {members.tolist()}: one system's types carry its one min_racks (16)"
        R = self.n_rentals
        if self.rent_offers.shape != (R,) or (R and self.rent_offers.min() < 0):
            yield f"rent_offer must be {R} offer indices >= 0, one per rental (12, 16)"
            return
        for members in self.offers:
            if self.rent_max_chips.shape == (R,) and np.any(self.rent_max_chips[members] != self.rent_max_chips[members[0]]):
                yield f"rent_max_chips of rentals {members.tolist()}: one offer's rentals carry its one limit (12, 16)"

    @property
    def n_sites(self) -> int:
        return int(len(self.site_pues))

    @property
    def site_budgets_w(self) -> np.ndarray:
        """[S] (16) each site's facility power budget ([power_budget_w] where not given)."""
        return np.array([self.power_budget_w]) if self.site_power_budget_w is None else self.site_power_budget_w

    @property
    def site_rack_limits(self) -> np.ndarray:
        """[S] (16) each site's most racks ([max_total_racks] where not given)."""
        return np.array([self.max_total_racks]) if self.site_max_racks is None else self.site_max_racks

    @property
    def systems(self) -> list[np.ndarray]:
        """(16) the types of each system that stands at more than one site (one type alone is its system)."""
        ids, counts = np.unique(self.rack_systems, return_counts=True)
        return [np.flatnonzero(self.rack_systems == k) for k, n in zip(ids, counts) if n > 1]

    @property
    def rent_offers(self) -> np.ndarray:
        """[R] (12, 16) each rental's offer (each its own where not given)."""
        return np.arange(self.n_rentals, dtype=np.int64) if self.rent_offer is None else self.rent_offer

    @property
    def offers(self) -> list[np.ndarray]:
        """(12, 16) the rentals of each offer rented at more than one site (one rental alone is its offer)."""
        ids, counts = np.unique(self.rent_offers, return_counts=True)
        return [np.flatnonzero(self.rent_offers == k) for k, n in zip(ids, counts) if n > 1]

    @property
    def column_site(self) -> np.ndarray:
        """[J] (16) the site of each column's replicas: that of the types its chips are on (one site: a column
        never spans two), -1 for a column on no rack (a hosted API)."""
        on = self.chips > 0
        site = self.rack_sites[np.argmax(on, axis=1)] if self.n_hardware else np.zeros(self.n_columns, dtype=np.int64)
        return np.where(on.any(axis=1), site, -1) if self.n_columns else np.zeros(0, dtype=np.int64)

    def _carbon_problems(self, priced: bool):
        """(14): the measures finite and >= 0; priced (min_carbon), every one given, a rack's above 0 and a kept
        one's at most it."""
        H, J, R = self.n_hardware, self.n_columns, self.n_rentals
        for name, size in (("carbon_kg_per_rack", H), ("kept_carbon_kg_per_rack", H), ("replica_carbon_kg", J),
                           ("carbon_rented", R)):
            arr = getattr(self, name)
            if arr is None or arr.shape != (size,) or not np.all(np.isfinite(arr) & (arr >= 0)):
                yield f"{name} must be {size} finite values >= 0 under min_carbon (14)"
                return
        if not priced:
            return
        rack, kept = self.carbon_kg_per_rack, self.kept_carbon_kg_per_rack
        assert rack is not None and kept is not None  # the loop above returned where either is missing
        if not np.all(rack > 0):
            yield "carbon_kg_per_rack must be > 0: a rack that emits nothing makes every fleet of it equal (14)"
        elif np.any(kept > rack * (1 + 1e-12)):
            yield "installed_carbon_kg_per_rack exceeds carbon_kg_per_rack: keeping a rack never emits more (14)"

    @property
    def n_rentals(self) -> int:
        return int(len(self.rent_hardware))

    @property
    def own_cost_usd(self) -> np.ndarray:
        """[J] (11): each column's own USD/year per replica (zeros where not given)."""
        return np.zeros(len(self.workload)) if self.column_cost_usd is None else self.column_cost_usd

    @property
    def floor_power_w(self) -> np.ndarray:
        """[H] (13): IT watts a rack draws doing no work (its design power where no curve is given)."""
        return self.rack_power_w if self.rack_idle_power_w is None else self.rack_idle_power_w

    @property
    def replica_power_w(self) -> np.ndarray:
        """[J] (13): IT watts a replica draws at peak beyond its chips' share of the racks' floor (zeros where not
        given)."""
        return np.zeros(len(self.workload)) if self.column_power_w is None else self.column_power_w

    @property
    def replica_energy_usd(self) -> np.ndarray:
        """[J] (13): USD/year of a replica's energy beyond the racks' floor (zeros where not given)."""
        return np.zeros(len(self.workload)) if self.column_energy_usd is None else self.column_energy_usd

    @property
    def pools(self) -> list[np.ndarray]:
        """(15) the columns of each pool, pools with a single column left out (they are that column alone)."""
        if self.pool is None:
            return []
        ids, counts = np.unique(self.pool[self.pool >= 0], return_counts=True)
        return [np.flatnonzero(self.pool == g) for g, n in zip(ids, counts) if n > 1]

    @property
    def pooled(self) -> np.ndarray:
        """[J] (15) whether a column's replicas are time shares of a pool's."""
        out = np.zeros(len(self.workload), dtype=bool)
        for members in self.pools:
            out[members] = True
        return out

    @property
    def integer_columns(self) -> np.ndarray:
        """[J] the columns whose x_j is an integer variable: integer replicas outside pools (15)."""
        return self.integer_replicas & ~self.pooled

    @property
    def kept_carbon_kg_per_rack(self) -> np.ndarray | None:
        """(14): kg CO2e a year of keeping an installed rack (a new rack's figure where not given)."""
        given = self.installed_carbon_kg_per_rack
        return self.carbon_kg_per_rack if given is None else given

    @property
    def replica_carbon_kg(self) -> np.ndarray:
        """[J] (14): kg CO2e a year of a replica's energy beyond the racks' floor (zeros where not given)."""
        return np.zeros(len(self.workload)) if self.column_carbon_kg is None else self.column_carbon_kg

    @property
    def carbon_rented(self) -> np.ndarray:
        """[R] (14): kg CO2e a year per rented chip (zeros where not given)."""
        return np.zeros(self.n_rentals) if self.rent_carbon_kg_per_chip is None else self.rent_carbon_kg_per_chip

    @property
    def kept_annual_cost_usd_per_rack(self) -> np.ndarray:
        """c'_h of (9): USD/year of keeping an installed rack in service (a new rack's cost where not given)."""
        given = self.installed_annual_cost_usd_per_rack
        return self.annual_cost_usd_per_rack if given is None else given

    def prices(self, measure: str) -> Prices:
        """The price table of ``measure`` (solvers.objectives.PRICE_TABLES), every part filled in: what a rack
        bought, an installed rack kept, a replica beyond its racks' floor and a rented chip add to it a year (the
        carbon table is zeros where the scenario gives no grid intensity: (14) is then not priced)."""
        H, R = self.n_hardware, self.n_rentals
        if measure == "annual_cost_usd":
            return Prices(self.annual_cost_usd_per_rack, self.kept_annual_cost_usd_per_rack,
                          {"own": self.own_cost_usd, "energy": self.replica_energy_usd}, self.rent_cost_usd_per_chip)
        if measure == "rack_power_w":  # (13): the racks' floor, a replica's draw above it; rented chips draw none here
            return Prices(self.floor_power_w, self.floor_power_w, {"draw": self.replica_power_w}, np.zeros(R))
        if measure == "carbon_kg_per_year":
            rack = self.carbon_kg_per_rack
            return Prices(np.zeros(H) if rack is None else rack,
                          np.zeros(H) if self.kept_carbon_kg_per_rack is None else self.kept_carbon_kg_per_rack,
                          {"energy": self.replica_carbon_kg}, self.carbon_rented)
        raise ValueError(f"price table {measure!r}, expected one of {', '.join(PRICE_TABLES)}")

    @property
    def has_installed(self) -> bool:
        return bool(np.any(self.installed_racks > 0))

    @property
    def n_hardware(self) -> int:
        return int(self.chips_per_rack.shape[0])

    @property
    def n_columns(self) -> int:
        return int(self.workload.shape[0])

    @property
    def n_workloads(self) -> int:
        return int(self.demand.shape[0])


# ---- derived data (pure functions of the problem) -------------------------------------------------------------
def same_problem(a, b) -> bool:
    """Whether two problems (two FleetProblems, or two multiperiod BuildOutProblems) are one MILP: of one type, every
    array and number of theirs equal (NaN equal to NaN)."""
    return type(a) is type(b) and all(same_value(getattr(a, f.name), getattr(b, f.name))
                                      for f in dataclasses.fields(a))


def same_value(x, y) -> bool:
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray)) or x.shape != y.shape:
            return False
        return bool(np.array_equal(x, y, equal_nan=x.dtype.kind == "f" and y.dtype.kind == "f"))
    return x == y or (x != x and y != y)


def new_racks(problem: FleetProblem, racks) -> np.ndarray:
    """[H] new_h of (9): the racks in service beyond the installed ones."""
    return np.maximum(np.asarray(racks, dtype=float) - problem.installed_racks, 0.0)


def annual_cost_of(problem: FleetProblem, racks) -> float:
    """USD/year of the racks in service: capex paid only on the new ones (9)."""
    r = np.asarray(racks, dtype=float)
    kept = problem.kept_annual_cost_usd_per_rack
    return float(kept @ r + (problem.annual_cost_usd_per_rack - kept) @ new_racks(problem, r))


# ---- build -> solve -> extract --------------------------------------------------------------------------------
@dataclass
class FleetModel:
    """What :func:`build` returns: the MathOpt model and the handles :func:`extract` reads back."""

    model: Any  # mathopt.Model (OR-Tools ships no types for MathOpt)
    racks: list  # [H] mathopt.Variable
    replicas: list  # [J] mathopt.Variable
    solver: str
    objective_scale: float  # solver objective x this = objective in the problem's units (with tie terms)
    replica_upper_bounds: np.ndarray
    build_seconds: float
    cpsat_var_scaling: float = 1.0
    shares: list = field(default_factory=list)  # [G] max_revenue: share of each group's demand served
    used: list = field(default_factory=list)  # [H] (7)/(T): binary, 1 when any rack of type h is bought
    new: list = field(default_factory=list)  # [H] (9): racks bought beyond the installed ones (empty: none installed)
    rented: list = field(default_factory=list)  # [R] (12): chips rented from each offer
    pools: list = field(default_factory=list)  # (15): (y_g, its columns) of each pool


BuiltT = TypeVar("BuiltT", bound=backends.Built)


@dataclass
class RawSolve(Generic[BuiltT]):
    """What :func:`solve` returns: the MathOpt result, the model it belongs to (a FleetModel, or the robust fleet's
    RobustModel), and the wall time."""

    built: BuiltT
    result: Any  # mathopt.SolveResult
    wall_seconds: float
    relative_gap_tolerance: float


@dataclass(frozen=True, eq=False)
class FleetSolution:
    """A plan and what the solver says about it. ``objective`` is the primary objective recomputed from ``racks``
    (USD/year for min_cost, IT watts for min_power); ``best_bound`` is a proven lower bound on it (tie terms taken
    out); ``violations`` is what :func:`evaluate` found wrong with the plan (empty when the solver kept its word)."""

    racks: np.ndarray  # [H] int
    replicas: np.ndarray  # [J] float
    status: str  # optimal | feasible | infeasible | time_limit
    objective: float
    best_bound: float
    relative_gap: float
    solver: str
    solve_seconds: float
    build_seconds: float = 0.0
    detail: str = ""
    violations: tuple = field(default_factory=tuple)
    shares: np.ndarray = field(default_factory=lambda: np.zeros(0))  # max_revenue: served share per group
    revenue: float = 0.0  # max_revenue: USD/year of the served shares
    tie_break: str = ""  # what (T) did, in words; empty when it did not run
    rented: np.ndarray = field(default_factory=lambda: np.zeros(0))  # [R] (12): chips rented from each offer
    heuristic: str = ""  # how a plan not from one MILP on every column was found (planner.fleet.solve), in words
    cautious: bool = False  # an option was sized at a loop's last resort, its most cautious (planner.fleet.solve)
    start: str = ""  # which plan closed the search, the MILP's or the rounded LP plan (solvers.heuristic), in
    # words; empty: no rounded plan was made (under ROUNDED_START_COLUMNS columns, or a start given)


def build(problem: FleetProblem, solver_name: str = "scip") -> FleetModel:
    """The MathOpt model of (1)-(5) and (O), scaled as described at the top of this module."""
    from ortools.math_opt.python import mathopt

    solver = backends.require(solver_name)
    t0 = time.perf_counter()
    m = mathopt.Model(name="fleet")
    r_ub, x_ub = rack_upper_bounds(problem), replica_upper_bounds(problem)
    r_lb = np.minimum(problem.racks_at_least, r_ub)  # (8) beyond a cap cannot hold: evaluate() then says so
    racks = [m.add_integer_variable(lb=float(r_lb[h]), ub=float(r_ub[h]), name=f"racks[{h}]")
             for h in range(problem.n_hardware)]
    integer = problem.integer_columns
    cpsat_scaling = cpsat_var_scaling(x_ub[~integer])
    x_ub = padded_replica_bounds(x_ub, integer, solver, cpsat_scaling)
    replicas = [m.add_variable(lb=0.0, ub=float(x_ub[j]), is_integer=bool(integer[j]),
                               name=f"x[{j}]") for j in range(problem.n_columns)]
    pools = add_pools(m, problem, replicas)
    shares = ([m.add_variable(lb=0.0, ub=1.0, name=f"share[g={g}]") for g in range(len(problem.group_value))]
              if objective_named(problem.objective).sells_shares else [])
    add_demand_rows(m, problem, replicas, shares)
    rented = add_rent_variables(m, problem)
    add_chip_rows(m, problem, racks, replicas, rented=rented, pools=pools)
    add_power_row(m, problem, racks, replicas=replicas)
    add_total_racks_row(m, problem, racks)
    new = add_new_racks(m, problem, racks, r_ub)
    add_supply_rows(m, problem, racks, new)
    add_offer_rows(m, problem, rented)
    used = add_platform_rows(m, problem, racks, r_ub)
    scale = set_objective(m, problem, racks, replicas, shares, new, rented)
    return FleetModel(m, racks, replicas, solver, scale, x_ub, time.perf_counter() - t0, cpsat_scaling, shares,
                      used, new, rented, pools)


def solve(built: BuiltT, time_limit_s: float = 60.0, relative_gap: float = 1e-4,
          absolute_gap: float = 0.0, hint: dict | None = None, from_scratch: bool = False) -> RawSolve[BuiltT]:
    """Run the solver named at build time (``solvers.backends.run``); a missing or failing solver raises
    SolverError. ``hint``: variable -> value of a known plan, a starting point for the backends that take one.
    ``from_scratch``: a first solve, with neither (``solvers.backends.solve_parameters``)."""
    params = solve_parameters(built, time_limit_s, relative_gap, absolute_gap, from_scratch)
    result, seconds = backends.run(built, params, backends.hint_parameters(built.solver, hint))
    return RawSolve(built, result, seconds, float(relative_gap))


def whole_chips_up(rented: np.ndarray, limit: np.ndarray, tolerance: float = 1e-6) -> np.ndarray:
    """Rented chips within the solver's ``tolerance`` below a whole chip taken as that chip (never past the offer's
    ``limit``): HiGHS rented 6.9999998 of the 7 chips a plan needed, which the plan then printed. Up only, so the
    chips rows the solver held still hold."""
    up = np.minimum(np.ceil(rented), limit)
    return np.where((up > rented) & (up - rented <= tolerance), up, rented)


def within_offers(problem: FleetProblem, rented: np.ndarray) -> np.ndarray:
    """Rented chips with each offer rented at several sites held to its limit over them (12, 16): where rounding up
    to whole chips (``whole_chips_up``) took the sum past it by a solver's tolerance, its rentals scaled back down."""
    out = np.asarray(rented, dtype=float).copy()
    for members in problem.offers:
        cap, total = float(problem.rent_max_chips[members[0]]), float(out[members].sum())
        if total > cap:
            out[members] *= cap / total
    return out


def extract(problem: FleetProblem, raw: RawSolve[FleetModel]) -> FleetSolution:
    """The plan from a solve: integers rounded, the primary objective recomputed, the bound and gap made honest."""
    built, result = raw.built, raw.result
    status = status_of(result)
    detail = f"{result.termination.reason.name}" + (
        f" ({result.termination.limit.name})" if result.termination.limit is not None else "")
    H, J = problem.n_hardware, problem.n_columns
    dual = float(result.termination.objective_bounds.dual_bound) * built.objective_scale / TIE_FACTOR
    bound = max(0.0, dual) if math.isfinite(dual) else 0.0
    if status not in HAS_PLAN:
        bound = math.inf if status == "infeasible" else bound
        return FleetSolution(np.zeros(H, dtype=np.int64), np.zeros(J), status, math.nan, bound, math.nan,
                             built.solver, raw.wall_seconds, built.build_seconds, detail)
    racks, replicas = _plan_values(problem, built, result)
    rented = (within_offers(problem, whole_chips_up(np.clip(np.asarray(result.variable_values(built.rented),
                                                                       dtype=float), 0.0, problem.rent_max_chips),
                                                               problem.rent_max_chips))
              if built.rented else np.zeros(0))
    shares, revenue = np.zeros(0), 0.0
    original = problem
    if built.shares:
        shares = np.clip(np.asarray(result.variable_values(built.shares), dtype=float), 0.0, 1.0)
        revenue = float(problem.group_value @ shares)
        problem = served_problem(problem, shares)
    ev = evaluate(problem, racks, replicas, rented=rented)
    if ev.violations and not problem.integer_replicas.all():
        repaired = repair_replicas(problem, racks, replicas, rented)
        ev_repaired = evaluate(problem, racks, repaired, rented=rented)
        if len(ev_repaired.violations) < len(ev.violations):
            detail += f"; continuous replicas re-solved after rounding (had {', '.join(ev.violations)})"
            replicas, ev = repaired, ev_repaired
    if built.shares:  # profit, as the negative of what was minimised
        # The plan sells all that its replicas serve: a solver may stop with a share a hair below it (SCIP left
        # 0.9996 of a demand its replicas covered whole), so the shares are read off the plan, not the solver.
        shares = served_shares(original, original.coverage.T @ replicas)
        revenue = float(original.group_value @ shares)
        objective = ev.objective - revenue
        bound = min(dual * TIE_FACTOR, objective) if math.isfinite(dual) else -math.inf
        gap = (objective - bound) / max(abs(objective), 1.0)
        return FleetSolution(racks, replicas, status, objective, bound, gap, built.solver, raw.wall_seconds,
                             built.build_seconds, detail, ev.violations, shares, revenue, rented=rented)
    bound = min(bound, ev.objective)  # a bound above the plan's value is solver tolerance, not information
    gap = (ev.objective - bound) / ev.objective if ev.objective > 0 else 0.0
    return FleetSolution(racks, replicas, status, ev.objective, bound, gap, built.solver, raw.wall_seconds,
                         built.build_seconds, detail, ev.violations, rented=rented)


def served_problem(problem: FleetProblem, shares: np.ndarray) -> FleetProblem:
    """The same problem with each row's demand cut to the share the plan serves (max_revenue), costed as
    min_cost: what evaluate and the rounding repair check a revenue plan against."""
    return dataclasses.replace(problem, demand=problem.demand * shares[problem.row_group], objective="min_cost",
                               row_group=DEFAULT, group_value=DEFAULT)


def _plan_values(problem: FleetProblem, built: FleetModel, result):
    racks = np.rint(np.asarray(result.variable_values(built.racks), dtype=float)).astype(np.int64)
    x = np.maximum(np.asarray(result.variable_values(built.replicas), dtype=float).reshape(-1), 0.0)
    x = np.where(problem.integer_columns, np.rint(x), x)
    return np.maximum(racks, 0), x


def repair_replicas(problem: FleetProblem, racks, replicas, rented=None) -> np.ndarray:
    """Continuous replicas re-solved by an LP (GLOP) with the racks and integer replicas held as given.

    Solvers accept integers within ~1e-6: an 'integer' replica of 1.6e-7 can cover the last sliver of a demand that
    rounding then drops (HiGHS did, on 4 of 1,000 workloads). The LP finds the continuous replicas of least rack
    value that serve the rest; where it has no solution, the replicas come back unchanged.
    """
    from ortools.math_opt.python import mathopt

    x = np.asarray(replicas, dtype=float).copy()
    cont = np.flatnonzero(~problem.integer_replicas)
    fixed = np.where(problem.integer_replicas, x, 0.0)
    residual_demand = problem.demand - problem.coverage.T @ fixed
    share = problem.chips / problem.chips_per_rack
    residual_racks = (np.asarray(racks, dtype=float) + rented_chips(problem, rented if rented is not None else
                                                                    np.zeros(problem.n_rentals)) / problem.chips_per_rack
                      - share.T @ fixed)
    m = mathopt.Model(name="repair")
    y = {j: m.add_variable(lb=0.0, name=f"x[{j}]") for j in cont.tolist()}
    for w in np.flatnonzero(residual_demand > 0).tolist():
        row = m.add_linear_constraint(lb=residual_demand[w] / problem.demand[w], name=f"demand[w={w}]")
        for j in cont[problem.coverage[cont, w] > 0].tolist():
            row.set_coefficient(y[j], float(problem.coverage[j, w] / problem.demand[w]))
    for h in range(problem.n_hardware):
        row = m.add_linear_constraint(ub=float(residual_racks[h]), name=f"chips[h={h}]")
        for j in cont[share[cont, h] > 0].tolist():
            row.set_coefficient(y[j], float(share[j, h]))
    if problem.core_chips is not None:  # (2c) wide stages' core chips within the racks too
        core = problem.core_chips / problem.chips_per_rack
        left = residual_racks + share.T @ fixed - core.T @ fixed
        for h in np.flatnonzero(core[cont].sum(axis=0) > 0).tolist():
            row = m.add_linear_constraint(ub=float(left[h]), name=f"cores[h={h}]")
            for j in cont[core[cont, h] > 0].tolist():
                row.set_coefficient(y[j], float(core[j, h]))
    weight = (replica_tie_coefficients(problem) / REPLICA_TIE
              + column_primary_coefficients(problem)) / primary_coefficients(problem).max()
    m.minimize(sum(float(weight[j]) * v for j, v in y.items()))
    with solver_output_to_stderr():
        result = mathopt.solve(m, mathopt.SolverType.GLOP)
    if result.termination.reason != mathopt.TerminationReason.OPTIMAL:
        return x
    x[cont] = np.maximum(np.asarray(result.variable_values([y[j] for j in cont.tolist()]), dtype=float), 0.0)
    return x


def optimize(problem: FleetProblem, solver: str = "scip", time_limit_s: float = 60.0,
             relative_gap: float = 1e-4, fewest_platforms: bool = True, start: tuple | None = None,
             rounded_start: bool | None = None) -> FleetSolution:
    """build -> solve -> extract, then (``fewest_platforms``) the tie-break (T): the plan on the fewest hardware
    types among those no worse than the first. ``start``: (racks [H], replicas [J]) of a nearby plan, handed to the
    solver as a hint (it need not be feasible: a plan of the same problem before its options were sized again).
    ``rounded_start``: without a ``start``, make the rounded LP plan first (``solvers.heuristic``; None: where the
    problem has ROUNDED_START_COLUMNS columns or more): the plan returned where the search finds none, the
    solution's ``start`` saying which plan closed it."""
    if objective_named(problem.objective).serves_most:
        return most_served(problem, solver, time_limit_s, relative_gap, fewest_platforms)
    started = time.perf_counter()
    built = build(problem, solver)
    hint = _plan_hint(built, built.used or [], start[0], start[1], problem) if start is not None else None
    # the rounded LP plan is made before the search but not handed to it: as a hint it slowed SCIP's first MILP on
    # 50 generated workloads from 17.7 s to 26.3 s (OPTIMIZER.md 22); it is the plan returned should the search
    # find none, and the yardstick the solution's ``start`` measures the search's plan against
    rounded = (rounded_lp_plan(problem, built) if start is None and (
        rounded_start if rounded_start is not None else problem.n_columns >= ROUNDED_START_COLUMNS) else None)
    first = extract(problem, solve(built, time_limit_s, relative_gap, hint=hint, from_scratch=start is None))
    if rounded is not None:
        first = closed_by(problem, first, rounded)
    if not fewest_platforms:
        return first
    return tie_break(problem, first, solver, time_limit_s - (time.perf_counter() - started), relative_gap, built)


def tie_break(problem: FleetProblem, sol: FleetSolution, solver: str = "scip", time_limit_s: float = 60.0,
              relative_gap: float = 1e-4, built: FleetModel | None = None) -> FleetSolution:
    """(T) on ``sol``, a plan of ``problem`` solved without it (``built``: the model it was solved on, else built
    again): the end of ``optimize``, and alone where the pools' rounds solve without it
    (planner.fleet.solve.tie_broken). ``sol`` as it is where (T) does not apply: no plan, a plan that breaks a row,
    or max_served (whose second stage, ``most_served``, runs (T) itself)."""
    if objective_named(problem.objective).serves_most or sol.status not in HAS_PLAN or sol.violations:
        return sol
    if systems_used(problem, sol.racks).sum() <= 1:
        return dataclasses.replace(sol, tie_break="the first plan is on one hardware type")
    return fewest_platforms_plan(problem, build(problem, solver) if built is None else built, sol, time_limit_s,
                                 relative_gap)


def closed_by(problem: FleetProblem, sol: FleetSolution, rounded: RoundedPlan) -> FleetSolution:
    """``sol`` saying in ``start`` which plan closed its search: the MILP's, better than the rounded LP plan by
    some share, or the rounded plan (the search found none better); where the search ended with no plan (time limit)
    and the rounded plan holds, that plan, its bound the better of the search's and the LP's (both hold for every
    plan)."""
    if not rounded.feasible:
        return dataclasses.replace(sol, start=f"the rounded LP plan breaks {', '.join(rounded.violations[:3])}: the "
                                              f"MILP's own search")
    if sol.status in HAS_PLAN and not sol.violations:
        # against the rounded plan's size: under max_revenue both are cost less revenue, and may be below zero
        better = (rounded.objective - sol.objective) / abs(rounded.objective) if rounded.objective else 0.0
        words = (f"the MILP's plan, {100 * better:.3g}% below the rounded LP plan"
                 if better > 1e-9 else "the rounded LP plan: the MILP found none better")
        return dataclasses.replace(sol, start=words)
    if objective_named(problem.objective).sells_shares:  # a revenue plan's shares are the search's to read
        return dataclasses.replace(sol, start="the MILP found no plan; the rounded LP plan sells no share")
    bound = max(sol.best_bound if math.isfinite(sol.best_bound) else 0.0, rounded.lp_bound, 0.0)
    bound = min(bound, rounded.objective)
    gap = (rounded.objective - bound) / rounded.objective if rounded.objective > 0 else 0.0
    return dataclasses.replace(sol, racks=rounded.racks, replicas=rounded.replicas, rented=rounded.rented,
                               status="time_limit", objective=rounded.objective, best_bound=bound, relative_gap=gap,
                               detail=f"{sol.detail}; the rounded LP plan returned", violations=(),
                               start="the rounded LP plan: the MILP found none in its time")


def rounded_lp_plan(problem: FleetProblem, built: FleetModel) -> RoundedPlan | None:
    """The rounded LP plan of ``built`` (``solvers.heuristic``), evaluated; None where the LP has no optimum."""
    values = rounded_values(problem, built)
    if values is None:
        return None
    racks, x, rented, bound = values
    ev = evaluate(problem, racks, x, rented=rented)
    return RoundedPlan(racks, x, rented, bound, ev.objective, ev.violations)


def served_values(problem: FleetProblem) -> np.ndarray:
    """[G] value_g of (10a): SERVED_WEIGHT x the most any plan can cost (racks at their bounds R_h, each at its
    primary p_h), shared among the groups by their weights (group_value)."""
    most = float(rack_upper_bounds(problem) @ primary_coefficients(problem)
                 + replica_upper_bounds(problem) @ column_primary_coefficients(problem)
                 + rent_upper_bounds(problem) @ rent_primary_coefficients(problem))
    weights = np.maximum(problem.group_value, 0.0)
    total = float(weights.sum())
    share = weights / total if total > 0 else np.full(len(weights), 1.0 / max(len(weights), 1))
    return SERVED_WEIGHT * max(most, 1.0) * share


def most_served(problem: FleetProblem, solver: str = "scip", time_limit_s: float = 60.0,
                relative_gap: float = 1e-4, fewest_platforms: bool = True) -> FleetSolution:
    """(10): the plan that serves the most demand (max_served), then costs the least. The solution's ``shares``
    are what it serves of each group, its objective the annual cost, its bound and gap those of (10b)."""
    started = time.perf_counter()
    first = optimize(dataclasses.replace(problem, objective="max_revenue", group_value=served_values(problem)),
                     solver, time_limit_s, relative_gap, fewest_platforms=False)
    if first.status not in HAS_PLAN:
        return dataclasses.replace(first, objective=math.nan, revenue=0.0)
    served = served_shares(problem, problem.coverage.T @ first.replicas)
    left = max(0.0, time_limit_s - (time.perf_counter() - started))
    # a hair below the served share: the replicas that served it serve it again, whatever the rounding
    second = optimize(served_problem(problem, served * (1.0 - 1e-9)), solver, left, relative_gap, fewest_platforms)
    if second.status not in HAS_PLAN:  # (10b) ran out of time: the first stage's plan stands
        second = dataclasses.replace(first, objective=evaluate(served_problem(problem, served), first.racks,
                                                               first.replicas, rented=first.rented).objective,
                                     best_bound=0.0)
    shares = served_shares(problem, problem.coverage.T @ second.replicas)
    ev = evaluate(problem, second.racks, second.replicas, rented=second.rented)
    return dataclasses.replace(second, shares=shares, revenue=0.0, violations=ev.violations,
                               solve_seconds=time.perf_counter() - started,
                               detail=f"(10a) {first.detail}; (10b) {second.detail}")


def fewest_platforms_plan(problem: FleetProblem, built: FleetModel, first: FleetSolution, time_limit_s: float,
                          relative_gap: float) -> FleetSolution:
    """(T): (T1) the fewest hardware types P* of any plan whose objective is at most ``first``'s, then (T2) the
    best plan by (O) on at most P* types, still no worse than ``first``. ``first`` comes back unchanged when it
    already uses P* types or when a step finds nothing in its time: T1 gets at most TIE_TIME_FACTOR times the first
    solve's time (at least TIE_MIN_SECONDS), so the tie-break never costs more than a fixed multiple of the answer.
    The bound stays ``first``'s (T1 and T2 solve restricted problems, whose bounds prove nothing about the whole):
    the plan returned is within the gap the first solve proved."""
    started = time.perf_counter()
    m = built.model
    used = built.used or add_used(m, problem, built.racks, rack_upper_bounds(problem))
    add_objective_cap(m, problem, built, first.objective)
    m.objective.clear()
    m.objective.is_maximize = False
    for u in used:
        m.objective.set_linear_coefficient(u, 1.0)
    budget = min(time_limit_s, max(TIE_MIN_SECONDS, TIE_TIME_FACTOR * first.solve_seconds))
    hint = _plan_hint(built, used, first.racks, first.replicas, problem)
    t1 = solve(built, budget, relative_gap=0.0, absolute_gap=0.5, hint=hint)  # integer objective: gap < 1 proves it
    first_types = int(systems_used(problem, first.racks).sum())
    proved = status_of(t1.result) == "optimal"
    kept = dataclasses.replace(first, tie_break=(
        f"the first plan's {first_types} hardware types are the fewest at its objective" if proved else
        f"no plan on fewer than the first plan's {first_types} hardware types found in {budget:.2g} s"))
    if status_of(t1.result) not in HAS_PLAN:
        return kept
    t1_racks = np.rint(np.asarray(t1.result.variable_values(built.racks), dtype=float))
    types = int(systems_used(problem, t1_racks).sum())
    if types >= first_types:
        return kept
    row = m.add_linear_constraint(ub=float(types), name="tie_platforms")
    for u in used:
        row.set_coefficient(u, 1.0)
    set_objective(m, problem, built.racks, built.replicas, built.shares, built.new, built.rented)
    left = time_limit_s - (time.perf_counter() - started)
    if left <= 0:
        return kept
    t1_replicas = np.asarray(t1.result.variable_values(built.replicas), dtype=float)
    hint = _plan_hint(built, used, t1_racks, t1_replicas, problem)
    t2 = extract(problem, solve(built, left, relative_gap, hint=hint))
    worse = t2.objective > first.objective + 1e-9 * max(abs(first.objective), 1.0)
    if t2.status not in HAS_PLAN or t2.violations or worse:
        return kept
    note = (f"{int(systems_used(problem, t2.racks).sum())} hardware types instead of the first plan's {first_types}, at no higher "
            f"objective ({'the fewest' if proved else 'fewest not proved in its time'})")
    return _with_first_bound(t2, first, time.perf_counter() - started, note)


def _plan_hint(built: FleetModel, used, racks, replicas, problem: FleetProblem) -> dict:
    """A plan as variable -> value, for :func:`solve`'s hint (shares are left to the solver; ``used`` per system)."""
    flags = systems_used(problem, racks)
    return backends.hint_from((built.racks, racks), (built.replicas, replicas), (used, [float(f) for f in flags]))


def _with_first_bound(sol: FleetSolution, first: FleetSolution, extra_seconds: float, note: str) -> FleetSolution:
    """``sol`` carrying ``first``'s bound, its gap recomputed against it, and the time of both steps."""
    bound = min(first.best_bound, sol.objective)
    gap = (sol.objective - bound) / max(abs(sol.objective), 1.0 if len(sol.shares) else 1e-300)
    return dataclasses.replace(sol, best_bound=bound, relative_gap=max(gap, 0.0) if sol.objective else 0.0,
                               solve_seconds=first.solve_seconds + extra_seconds,
                               build_seconds=first.build_seconds, detail=first.detail, tie_break=note,
                               start=first.start)


# ---- evaluate: every constraint and the objective, from the plan alone ----------------------------------------
@dataclass(frozen=True, eq=False)
class Evaluation:
    """Rows and objective recomputed from a plan. Slacks are in natural units (>= 0 means satisfied)."""

    served: np.ndarray  # [W] demand units served
    demand_slack: np.ndarray  # [W] served - demand
    chips_used: np.ndarray  # [H]
    chips_slack: np.ndarray  # [H] chips_per_rack x racks - chips used
    supply_slack: np.ndarray  # [H] max_racks - racks bought (inf where no cap; (9): new racks only)
    facility_power_w: float  # pue x the peak IT draw, summed over the sites
    power_slack_w: float  # budget - facility power (inf where none); several sites (16): the least of theirs
    total_racks: int
    total_racks_slack: float  # several sites: the least of theirs
    annual_cost_usd: float
    rack_power_w: float  # IT power at the peak draw (13): the racks' floor plus the replicas' draw beyond it
    objective: float  # what the objective minimises (solvers.objectives): cost, IT power, carbon, or cost less
    # revenue
    violations: tuple  # names like "demand[w=2]", empty when the plan is feasible
    shares: np.ndarray = field(default_factory=lambda: np.zeros(0))  # max_revenue: served share per group
    revenue_usd: float = 0.0  # max_revenue: USD/year of the served shares
    core_slack: np.ndarray = field(default_factory=lambda: np.zeros(0))  # [H] (2c) chips_per_rack x racks - core
    # chips used
    site_facility_power_w: np.ndarray = field(default_factory=lambda: np.zeros(0))  # [S] (16) each site's
    site_racks: np.ndarray = field(default_factory=lambda: np.zeros(0))  # [S] (16) racks in service at each site

    @property
    def feasible(self) -> bool:
        return not self.violations


def served_shares(problem: FleetProblem, served: np.ndarray) -> np.ndarray:
    """max_revenue: the largest share of each group's demand a plan serves, min(1, served_w / demand_w) over the
    group's rows (the best the share variables of (6) can be for these replicas)."""
    ratio = np.where(problem.demand > 0, served / np.where(problem.demand > 0, problem.demand, 1.0), np.inf)
    shares = np.ones(len(problem.group_value))
    np.minimum.at(shares, problem.row_group, ratio)
    return np.clip(shares, 0.0, 1.0)


def evaluate(problem: FleetProblem, racks, replicas, shares=None, tol: float = EVAL_TOL, rented=None) -> Evaluation:
    """Recompute (1)-(4), the bounds, integrality and the objective of a plan; no solver involved.

    A row counts as violated when its slack, scaled as the MILP scales it, is below ``-tol``. Under max_revenue
    the demand rows are held to the served ``shares`` (default: the most the replicas serve, ``served_shares``)
    and the objective is the annual cost less their revenue.
    """
    r = np.asarray(racks, dtype=float).reshape(-1)
    x = np.asarray(replicas, dtype=float).reshape(-1)
    if r.shape != (problem.n_hardware,) or x.shape != (problem.n_columns,):
        raise ValueError(f"plan shapes {r.shape}, {x.shape}; expected ({problem.n_hardware},), "
                         f"({problem.n_columns},)")
    rent = np.zeros(problem.n_rentals) if rented is None else np.asarray(rented, dtype=float).reshape(-1)
    if rent.shape != (problem.n_rentals,):
        raise ValueError(f"rented has shape {rent.shape}; expected ({problem.n_rentals},)")
    served = problem.coverage.T @ x
    held = pool_chip_replicas(problem, x)  # (15): a pool holds whole replicas
    chips_used = problem.chips.T @ held
    core_used = problem.core_chips.T @ held if problem.core_chips is not None else np.zeros(problem.n_hardware)
    it_power = float(problem.floor_power_w @ r + problem.replica_power_w @ x)  # (13) the peak draw
    site_it = site_sums(problem, problem.floor_power_w * r, problem.rack_sites)
    site_it += site_sums(problem, problem.replica_power_w * x, problem.column_site)
    site_facility = problem.site_pues * site_it  # (16) each site's own pue
    site_racks = site_sums(problem, r, problem.rack_sites)
    facility = float(site_facility.sum())
    # (11) the columns' own costs, (13) their energy beyond the floor, (12) the chips rented
    cost = (annual_cost_of(problem, r) + float((problem.own_cost_usd + problem.replica_energy_usd) @ x)
            + float(problem.rent_cost_usd_per_chip @ rent))
    goal = objective_named(problem.objective)
    demand, revenue = problem.demand, 0.0
    if goal.sells_shares:
        shares = served_shares(problem, served) if shares is None else np.clip(np.asarray(shares, float), 0.0, 1.0)
        demand, revenue = problem.demand * shares[problem.row_group], float(problem.group_value @ shares)
    else:
        shares = np.zeros(0)
    ev = Evaluation(
        served=served, demand_slack=served - demand, chips_used=chips_used,
        chips_slack=problem.chips_per_rack * r + rented_chips(problem, rent) - chips_used,
        core_slack=problem.chips_per_rack * r + rented_chips(problem, rent) - core_used,
        supply_slack=supply_slack(problem, r),
        facility_power_w=facility, power_slack_w=float((problem.site_budgets_w - site_facility).min()),
        total_racks=int(round(r.sum())), total_racks_slack=float((problem.site_rack_limits - site_racks).min()),
        site_facility_power_w=site_facility, site_racks=site_racks,
        annual_cost_usd=cost, rack_power_w=it_power,
        objective=primary_value(problem, r, x, rent) - (revenue if goal.credits_revenue else 0.0), violations=(),
        shares=shares, revenue_usd=revenue)
    violations = tuple(_violations(problem, r, x, ev, tol, rent)) + tuple(
        f"rent[{k}]" for k in np.flatnonzero((rent < -tol) | (rent > problem.rent_max_chips + tol))) + tuple(
        f"offer[{int(problem.rent_offers[m[0]])}]" for m in problem.offers
        if rent[m].sum() > problem.rent_max_chips[m[0]] + tol)  # (12, 16): one offer's chips over its sites
    object.__setattr__(ev, "violations", violations)
    return ev


def site_sums(problem: FleetProblem, values, site) -> np.ndarray:
    """[S] (16) ``values`` summed by ``site`` (an index per value; -1, a column on no rack, counts at none)."""
    out = np.zeros(problem.n_sites)
    keep = np.asarray(site) >= 0
    np.add.at(out, np.asarray(site)[keep], np.asarray(values, dtype=float)[keep])
    return out


def supply_slack(problem: FleetProblem, racks) -> np.ndarray:
    """[H] (9, 16) each type's supply cap less its new racks, and its system's cap (the largest of its types')
    less the system's new racks over all its sites: the smaller."""
    new = new_racks(problem, racks)
    system = problem.rack_systems
    bought = np.zeros(int(system.max(initial=-1)) + 1)
    np.add.at(bought, system, new)
    cap = np.full(len(bought), -np.inf)
    np.maximum.at(cap, system, problem.max_racks)
    return np.minimum(problem.max_racks - new, cap[system] - bought[system])


def primary_value(problem: FleetProblem, racks, replicas, rented) -> float:
    """(O)'s primary of a plan, as the objective's arrays give it: p'_h on the racks in service, p_h - p'_h more on
    the new ones (9), c_j on the replicas, the rented chips' (12). The annual cost under the cost objectives, the
    peak IT draw under min_power, kg CO2e a year under min_carbon."""
    r = np.asarray(racks, dtype=float)
    kept = kept_primary_coefficients(problem)
    return float(kept @ r + (primary_coefficients(problem) - kept) @ new_racks(problem, r)
                 + column_primary_coefficients(problem) @ np.asarray(replicas, dtype=float)
                 + rent_primary_coefficients(problem) @ np.asarray(rented, dtype=float))


def _violations(problem: FleetProblem, r, x, ev: Evaluation, tol: float, rent=None):
    demand = problem.demand
    for w in np.flatnonzero(ev.demand_slack / np.where(demand > 0, demand, 1.0) < -tol):
        yield f"demand[w={w}]"
    for h in np.flatnonzero(ev.chips_slack / problem.chips_per_rack < -tol):
        yield f"chips[h={h}]"
    for h in np.flatnonzero(ev.core_slack / problem.chips_per_rack < -tol):
        yield f"cores[h={h}]"  # (2c): wide stages within the domains' cores
    rent_chips = rented_chips(problem, rent) if rent is not None else np.zeros(problem.n_hardware)
    for h in np.flatnonzero((ev.chips_used > 1e-6) & (r < 0.5) & (rent_chips <= 0)):
        yield f"uses[h={h}]"  # (2b): chips used on a type with no rack and none rented, however few
    for h in np.flatnonzero(ev.supply_slack < -tol):
        yield f"max_racks[h={h}]"
    for h in np.flatnonzero(r < problem.racks_at_least - tol):
        yield f"racks_at_least[h={h}]"
    several = problem.n_sites > 1
    power_slack = (problem.site_budgets_w - ev.site_facility_power_w) / (problem.site_pues * problem.rack_power_w.max())
    for s in np.flatnonzero(power_slack < -tol):
        yield f"power[s={s}]" if several else "power"
    for s in np.flatnonzero(problem.site_rack_limits - ev.site_racks < -tol):
        yield f"total_racks[s={s}]" if several else "total_racks"
    if new_racks(problem, r).sum() > problem.max_new_racks + tol:
        yield "max_new_racks"
    for h in np.flatnonzero((r < -tol) | (np.abs(r - np.rint(r)) > tol)):
        yield f"racks_integer[h={h}]"
    if systems_used(problem, r).sum() > problem.max_platforms:
        yield "platforms"
    system_racks = np.zeros(int(problem.rack_systems.max(initial=-1)) + 1)
    np.add.at(system_racks, problem.rack_systems, r)  # (7, 16): a minimum purchase over a system's sites
    of_system = system_racks[problem.rack_systems]
    for h in np.flatnonzero((r > 0.5) & (of_system < problem.min_racks - tol)):
        yield f"min_racks[h={h}]"
    for j in np.flatnonzero(x < -tol):
        yield f"replicas_nonnegative[j={j}]"
    for j in np.flatnonzero(problem.integer_columns & (np.abs(x - np.rint(x)) > tol)):
        yield f"replicas_integer[j={j}]"
