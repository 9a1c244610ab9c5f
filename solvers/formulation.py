"""The fleet MILP's rows and objective terms, as public builders shared by the single-period MILP
(``solvers.milp.build``, whose header holds the numbered formulation these implement: docs/OPTIMIZER.md 1) and the
robust fleet (``solvers.robust.build``, which calls them once per sample with its tag and late racks).

Each builder names the numbered row it adds. They take a ``solvers.milp.FleetProblem`` (``problem``), a MathOpt
model ``m`` and its variables, add rows scaled as section 2 of the formulation says, and return what a caller needs
back (the variables they add). The coefficient arrays of (O) come from the objective's registry entry
(``solvers.objectives``), so no builder holds a formula of its own for an objective.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from solvers.backends import BACKENDS
from solvers.objectives import objective as objective_named

RACK_TIE = 1e-7  # D_R in (O)
REPLICA_TIE = 1e-6  # D_X in (O): its coefficients stay above SCIP's epsilon (1e-9), OPTIMIZER.md 3
TIE_FACTOR = 1.0 + RACK_TIE + REPLICA_TIE


# The default of a problem's array field that __post_init__ fills in (from the other fields) when it is given as None
# or left out: the field is then an array on every built problem, and annotated as one. Typed Any, so that the
# constructor and dataclasses.replace still take None (``DEFAULT`` where a caller asks for the default again).
DEFAULT: Any = None


class SiteTypes:
    """What a problem of hardware types standing at sites reads the same way (``solvers.milp.FleetProblem``'s (16),
    ``solvers.multiperiod.BuildOutProblem``'s (8)): each type's site and system, and each site's PUE, from the
    problem's fields where given, else one site and each type its own system."""

    chips_per_rack: np.ndarray  # [H]
    rack_site: np.ndarray | None
    rack_system: np.ndarray | None
    site_pue: np.ndarray | None
    pue: float

    @property
    def rack_sites(self) -> np.ndarray:
        """[H] each type's site (all at site 0 where not given)."""
        n = len(self.chips_per_rack)
        return np.zeros(n, dtype=np.int64) if self.rack_site is None else self.rack_site

    @property
    def rack_systems(self) -> np.ndarray:
        """[H] each type's system (each its own where not given)."""
        n = len(self.chips_per_rack)
        return np.arange(n, dtype=np.int64) if self.rack_system is None else self.rack_system

    @property
    def site_pues(self) -> np.ndarray:
        """[sites] each site's PUE ([pue] where not given)."""
        return np.array([self.pue]) if self.site_pue is None else self.site_pue

def frozen(a, dtype) -> np.ndarray:
    arr = np.array(a, dtype=dtype, copy=True)
    arr.setflags(write=False)
    return arr


# ---- (O)'s coefficients: pure functions of the problem -------------------------------------------------------
def primary_coefficients(problem) -> np.ndarray:
    """p_h of (O), the objective's array (solvers.objectives): USD/year per rack for the cost objectives, IT
    watts for min_power, kg CO2e a year for min_carbon."""
    return objective_named(problem.objective).primary(problem)


def kept_primary_coefficients(problem) -> np.ndarray:
    """p'_h of (9): the primary of keeping an installed rack in service (its capex, or its making, sunk)."""
    return objective_named(problem.objective).kept_primary(problem)


def secondary_coefficients(problem) -> np.ndarray:
    """q_h of (O): the tie-break measure between racks of equal primary value."""
    return objective_named(problem.objective).secondary(problem)


def rack_tie_coefficients(problem) -> np.ndarray:
    """D_R q_h / M of (O), with M = max q/p, so every coefficient is at most D_R p_h."""
    p, q = primary_coefficients(problem), secondary_coefficients(problem)
    return RACK_TIE * q / np.max(q / p)


def replica_tie_coefficients(problem) -> np.ndarray:
    """D_X sum_h p_h chips_jh / chips_per_rack_h of (O): the primary value of the rack shares a replica occupies."""
    p = primary_coefficients(problem)
    return REPLICA_TIE * (problem.chips / problem.chips_per_rack) @ p


def column_primary_coefficients(problem) -> np.ndarray:
    """c_j of (11), (13) and (14): each replica's own cost and energy beyond the racks' floor in the objective's
    primary (under min_power its peak IT watts beyond the floor: an API column draws none)."""
    return objective_named(problem.objective).column_primary(problem)


def rent_primary_coefficients(problem) -> np.ndarray:
    """(12): a rented chip in the objective's primary (0 under min_power: no site power)."""
    return objective_named(problem.objective).rent_primary(problem)


# ---- (5) implied bounds ----------------------------------------------------------------------------------------
def replica_upper_bounds(problem) -> np.ndarray:
    """X_j of (5): one column alone never needs more replicas than cover, by themselves, every demand row it
    serves."""
    cov, d = problem.coverage, problem.demand[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.where((cov > 0) & (d > 0), d / np.where(cov > 0, cov, 1.0), 0.0)
    ub = need.max(axis=1, initial=0.0)
    # ceil with a relative guard so 2.0000000001 (rounding) stays 2, but 2.001 becomes 3
    return np.where(problem.integer_replicas, np.ceil(ub * (1.0 - 1e-12)), ub)


def occupied_chips(problem, x: np.ndarray) -> np.ndarray:
    """[H] the rack chips replicas ``x`` need: the larger of (2)'s and (2c)'s sums."""
    need = problem.chips.T @ x
    return need if problem.core_chips is None else np.maximum(need, problem.core_chips.T @ x)


def rented_chips(problem, rented) -> np.ndarray:
    """[H] the chips each hardware type rents, from the offers' rented chips [R]."""
    out = np.zeros(problem.n_hardware)
    if problem.n_rentals:
        np.add.at(out, problem.rent_hardware, np.asarray(rented, dtype=float))
    return out


def rack_upper_bounds(problem) -> np.ndarray:
    """R_h of (5): supply cap, power budget, site rack limit, and enough racks for every column at its bound."""
    need = occupied_chips(problem, replica_upper_bounds(problem)) / problem.chips_per_rack
    need = np.where(need > 0, np.maximum(need, problem.min_racks), need)  # (7): a bought type's minimum purchase
    need = np.maximum(need, problem.racks_at_least)  # (8): kept racks, within the caps
    ub = np.minimum(problem.max_racks + problem.installed_racks, np.ceil(need * (1.0 - 1e-12)))
    ub = np.minimum(ub, problem.max_new_racks + problem.installed_racks)  # (9)
    return np.floor(np.minimum(ub, site_caps(problem)) * (1.0 + 1e-12))


def site_caps(problem) -> np.ndarray:
    """[H] (16) the racks of each type its own site's floor space and power budget hold alone (inf where neither
    limits it; a rack at rest drawing nothing is bounded by the floor space alone)."""
    site = problem.rack_sites
    budget, pue = problem.site_budgets_w[site], problem.site_pues[site]
    with np.errstate(divide="ignore", invalid="ignore"):
        power = np.where(np.isfinite(budget), budget / (pue * problem.floor_power_w) * (1.0 + 1e-12), np.inf)
    return np.minimum(problem.site_rack_limits[site], power)


def rent_upper_bounds(problem) -> np.ndarray:
    """[R] (12): an offer never rents more than its limit, nor more chips of its type than every column at its
    bound X_j would use."""
    need = occupied_chips(problem, replica_upper_bounds(problem))
    return np.minimum(problem.rent_max_chips, need[problem.rent_hardware]) if problem.n_rentals else np.zeros(0)


def padded_replica_bounds(x_ub: np.ndarray, integer_replicas: np.ndarray, solver: str, scaling: float) -> np.ndarray:
    """X_j of (5) as the variables carry them: on a backend that solves continuous variables on a grid (CP-SAT,
    ``solvers.backends``), continuous X_j get 2 steps of the grid more, so the grid's last point reaches past the
    bound (else the bound becomes a cut); unchanged elsewhere."""
    if not BACKENDS[solver].scales_continuous:
        return x_ub
    return np.where(integer_replicas, x_ub, x_ub + 2.0 / scaling)


# ---- rows: (1) demand, (2) chips, (3) power, (4) racks, (7) platforms, (9) new racks, (12) rentals -------------
def installed_terms(racks, late=()) -> list[list]:
    """(2)-(4)'s installed racks: [H] the variables whose sum is each type's installed racks: racks_h, plus a
    robust sample's late racks y_sh where given (solvers.robust)."""
    return [[r] + ([late[h]] if late else []) for h, r in enumerate(racks)]


def add_demand_rows(m, problem, replicas, shares=(), tag: str = "") -> None:
    """(1), divided by demand_w; under max_revenue (6) the right side is the served share of the row's group."""
    coef = problem.coverage / np.where(problem.demand > 0, problem.demand, 1.0)[None, :]
    for w in range(problem.n_workloads):
        if problem.demand[w] <= 0:
            continue
        row = m.add_linear_constraint(lb=0.0 if shares else 1.0, name=f"demand[{tag}w={w}]")
        if shares:
            row.set_coefficient(shares[int(problem.row_group[w])], -1.0)
        for j in np.flatnonzero(coef[:, w] > 0):
            row.set_coefficient(replicas[j], float(coef[j, w]))


# (2b): a replica that takes less than this share of a rack leaves (2)'s activity within the solvers' feasibility
# and integrality tolerances (10 million chips a rack: 8 chips are 8e-7 of it, and racks_h = 6e-7 passes as 0), so
# its column is also tied to its racks by x_j <= X_j racks_h, whose coefficients do not depend on the rack's size.
TINY_RACK_SHARE = 1e-3


def add_chip_rows(m, problem, racks, replicas, tag: str = "", late=(), rented=(), pools=()) -> None:
    """(2), divided by chips_per_rack_h, on the installed racks and (12) the chips rented; (15) a pool's chips on
    its whole replicas y_g (``pools``: ``add_pools``' (y_g, columns)), not on its members' shares; (2b) where a
    replica is a tiny share of a rack on a type no chip is rented of."""
    share = problem.chips / problem.chips_per_rack
    pooled = np.zeros(len(replicas), dtype=bool)
    for _, members in pools:
        pooled[members] = True
    x_ub = replica_upper_bounds(problem)
    for h, installed in enumerate(installed_terms(racks, late)):
        if not any(problem.rent_hardware[r] == h for r in range(len(rented))):
            add_use_rows(m, share[:, h], x_ub, installed, replicas, pooled, pools, f"{tag}h={h}")
        add_rack_row(m, problem, h, share[:, h], f"chips[{tag}h={h}]", installed, replicas, pooled, pools, rented)
        if problem.core_chips is not None and np.any(problem.core_chips[:, h] > 0):
            # (2c): the stages wider than a scale-up domain's tail within the domains' cores (``core_chips``,
            # already in rack chips: docs/OPTIMIZER.md 17)
            add_rack_row(m, problem, h, problem.core_chips[:, h] / problem.chips_per_rack[h], f"cores[{tag}h={h}]",
                         installed, replicas, pooled, pools, rented)


def add_rack_row(m, problem, h: int, share, name: str, installed, replicas, pooled, pools, rented) -> None:
    """One row of (2) or (2c) on type h: ``share`` [J] of a rack each replica takes, within the installed racks and
    the chips rented; a pool's on its whole replicas y_g."""
    row = m.add_linear_constraint(ub=0.0, name=name)
    for v in installed:
        row.set_coefficient(v, -1.0)
    for r, v in enumerate(rented):
        if problem.rent_hardware[r] == h:
            row.set_coefficient(v, -1.0 / float(problem.chips_per_rack[h]))
    for j in np.flatnonzero((share > 0) & ~pooled).tolist():
        row.set_coefficient(replicas[j], float(share[j]))
    for y, members in pools:
        if share[members[0]] > 0:
            row.set_coefficient(y, float(share[members[0]]))


def add_use_rows(m, share, x_ub, installed, replicas, pooled, pools, tag: str) -> None:
    """(2b) x_j / X_j <= racks_h (a pool's y_g / Y_g) for the columns on type h whose replica is under
    TINY_RACK_SHARE of a rack: a column used at all needs a whole rack, whatever the tolerances."""
    def tie(v, bound, name):
        row = m.add_linear_constraint(ub=0.0, name=name)
        row.set_coefficient(v, 1.0 / bound)
        for r in installed:
            row.set_coefficient(r, -1.0)

    for j in np.flatnonzero((share > 0) & (share < TINY_RACK_SHARE) & ~pooled & (x_ub > 0)).tolist():
        tie(replicas[j], float(x_ub[j]), f"uses[{tag},j={j}]")
    for g, (y, members) in enumerate(pools):
        if 0 < share[members[0]] < TINY_RACK_SHARE and y.upper_bound > 0:
            tie(y, float(y.upper_bound), f"uses[{tag},g={g}]")


def add_pools(m, problem, replicas, tag: str = "") -> list[tuple]:
    """(15): per pool an integer y_g (its whole replicas, at most the sum of its members' bounds rounded up) and
    the row sum_{j in g} x_j <= y_g. Returns [(y_g, columns)]."""
    out = []
    x_ub = replica_upper_bounds(problem)
    for g, members in enumerate(problem.pools):
        y = m.add_integer_variable(lb=0.0, ub=float(np.ceil(x_ub[members].sum() * (1.0 - 1e-12))),
                                   name=f"pool[{tag}g={g}]")
        row = m.add_linear_constraint(ub=0.0, name=f"pool_share[{tag}g={g}]")
        for j in members.tolist():
            row.set_coefficient(replicas[j], 1.0)
        row.set_coefficient(y, -1.0)
        out.append((y, members))
    return out


def pool_chip_replicas(problem, x: np.ndarray) -> np.ndarray:
    """[J] the replicas whose chips a plan holds (15): each column's own, but a pool's members' shares summed and
    rounded up to whole replicas, charged to its first member."""
    held = np.asarray(x, dtype=float).copy()
    for members in problem.pools:
        total = float(held[members].sum())
        held[members] = 0.0
        held[members[0]] = np.ceil(total - 1e-6) if total > 1e-9 else 0.0
    return held


def add_power_row(m, problem, racks, tag: str = "", late=(), replicas=()) -> None:
    """(3) at the peak draw (13), one row per site with a budget (16): its installed racks' floor plus each of its
    replicas' draw beyond it, divided by its pue * the largest rack power."""
    above, where = problem.replica_power_w, problem.column_site
    terms = installed_terms(racks, late)
    for s in range(problem.n_sites):
        budget, pue = float(problem.site_budgets_w[s]), float(problem.site_pues[s])
        if not math.isfinite(budget):
            continue
        unit = pue * float(problem.rack_power_w.max())
        name = ("power" if problem.n_sites == 1 else f"power[s={s}]") if not tag else (
            f"power[{tag}]" if problem.n_sites == 1 else f"power[{tag}s={s}]")
        row = m.add_linear_constraint(ub=budget / unit, name=name)
        for h in np.flatnonzero(problem.rack_sites == s).tolist():
            for v in terms[h]:
                row.set_coefficient(v, float(pue * problem.floor_power_w[h] / unit))
        for j, v in enumerate(replicas):
            if above[j] > 0 and where[j] == s:
                row.set_coefficient(v, float(pue * above[j] / unit))


def add_total_racks_row(m, problem, racks, tag: str = "", late=()) -> None:
    """(4), on the installed racks: one row per site with a limit (16)."""
    terms = installed_terms(racks, late)
    for s in range(problem.n_sites):
        limit = float(problem.site_rack_limits[s])
        if not math.isfinite(limit):
            continue
        name = ("total_racks" if problem.n_sites == 1 else f"total_racks[s={s}]") if not tag else (
            f"total_racks[{tag}]" if problem.n_sites == 1 else f"total_racks[{tag}s={s}]")
        row = m.add_linear_constraint(ub=limit, name=name)
        for h in np.flatnonzero(problem.rack_sites == s).tolist():
            for v in terms[h]:
                row.set_coefficient(v, 1.0)


def add_supply_rows(m, problem, racks, new=(), tag: str = "", late=()) -> None:
    """(16): a system at several sites buys at most its supply cap over them all, sum_{h in k} new_h <= cap_k
    (new_h = racks_h without an installed fleet; with a robust sample's late racks y_h, racks_h + y_h); a type
    alone has the cap as its bound already."""
    bought = installed_terms(new or racks, late)
    for k, members in enumerate(problem.systems):
        cap = float(problem.max_racks[members].max())  # a type its site may not buy carries 0
        if not math.isfinite(cap):
            continue
        row = m.add_linear_constraint(ub=cap, name=f"supply[{tag}k={k}]")
        for h in members.tolist():
            for v in bought[h]:
                row.set_coefficient(v, 1.0)


def add_offer_rows(m, problem, rented) -> None:
    """(12, 16): an offer rented at several sites rents at most its limit over them all, sum_{r in o} rent_r <=
    rent_max_o; a rental alone has its limit as its bound already."""
    for members in problem.offers:
        cap = float(problem.rent_max_chips[members[0]])
        if not math.isfinite(cap):
            continue
        row = m.add_linear_constraint(ub=cap, name=f"offer[o={int(problem.rent_offers[members[0]])}]")
        for r in members.tolist():
            row.set_coefficient(rented[r], 1.0)


def limits_platforms(problem) -> bool:
    """Whether (7) applies: a platform limit or a minimum purchase."""
    return math.isfinite(problem.max_platforms) or bool(np.any(problem.min_racks > 0))


def add_platform_rows(m, problem, racks, r_ub, tag: str = "", late=(), late_ub=None) -> list:
    """(7): a binary per system, 1 when any rack of it is bought at any site (racks_h <= R_h used_k(h)); at least
    min_racks_k racks over its sites when it is (sum_{h in k} racks_h >= min_racks_k used_k); at most max_platforms
    systems. With a robust sample's late racks y_h (``late``, bounded by ``late_ub``), on racks_h + y_h: a system
    bought late is bought, its minimum purchase and its platform counted in that sample. Returns the binaries (none
    when the problem limits neither)."""
    if not limits_platforms(problem):
        return []
    used = add_used(m, problem, racks, r_ub, tag, late, late_ub)
    installed = installed_terms(racks, late)
    for k, u in enumerate(used):
        members = np.flatnonzero(system_index(problem) == k)
        least = float(problem.min_racks[members[0]])
        if least > 0:
            lower = m.add_linear_constraint(lb=0.0, name=f"min_racks[{tag}h={int(members[0])}]")
            for h in members.tolist():
                for v in installed[h]:
                    lower.set_coefficient(v, 1.0)
            lower.set_coefficient(u, -least)
    if math.isfinite(problem.max_platforms):
        row = m.add_linear_constraint(ub=problem.max_platforms, name=f"platforms[{tag}]" if tag else "platforms")
        for u in used:
            row.set_coefficient(u, 1.0)
    return used


def system_index(problem) -> np.ndarray:
    """[H] (16) each type's system as 0..K-1 in order of first appearance (the index of its used_k)."""
    _, first, inverse = np.unique(problem.rack_systems, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))  # systems numbered in order of their first type
    return order[inverse].astype(np.int64)


def systems_used(problem, racks) -> np.ndarray:
    """[K] (16) whether each system has a rack in a plan, at any site."""
    index = system_index(problem)
    out = np.zeros(int(index.max(initial=-1)) + 1, dtype=bool)
    np.logical_or.at(out, index, np.asarray(racks, dtype=float) > 0.5)
    return out


def add_used(m, problem, racks, r_ub, tag: str = "", late=(), late_ub=None) -> list:
    """used_k binaries, one per system (one per type at one site), with racks_h (+ a robust sample's late y_h)
    <= (R_h + its bound) used_k(h), shared by (7) and (T)."""
    index = system_index(problem)
    used = [m.add_binary_variable(name=f"used[{tag}{k}]") for k in range(int(index.max(initial=-1)) + 1)]
    installed = installed_terms(racks, late)
    for h in range(problem.n_hardware):
        most = max(float(r_ub[h]), 0.0) + (max(float(late_ub[h]), 0.0) if late else 0.0)
        upper = m.add_linear_constraint(ub=0.0, name=f"used_upper[{tag}h={h}]")
        for v in installed[h]:
            upper.set_coefficient(v, 1.0)
        upper.set_coefficient(used[index[h]], -most)
    return used


def add_rent_variables(m, problem) -> list:
    """(12): rent_r >= 0 continuous chips of each offer, at most its limit within what the columns could use
    (rent_upper_bounds); :func:`add_chip_rows` adds them to (2)'s right side."""
    rent_ub = rent_upper_bounds(problem)
    return [m.add_variable(lb=0.0, ub=float(rent_ub[r]), name=f"rent[{r}]") for r in range(problem.n_rentals)]


def add_new_racks(m, problem, racks, r_ub) -> list:
    """(9): new_h >= racks_h - installed_h within the supply cap, and sum_h new_h <= max_new_racks. Returns the
    new_h variables (none without an installed fleet: new_h is racks_h, and only the sum's row is added)."""
    new = []
    if problem.has_installed:
        for h, r in enumerate(racks):
            ub = max(0.0, min(float(problem.max_racks[h]), float(r_ub[h])))
            v = m.add_integer_variable(lb=0.0, ub=ub, name=f"new[{h}]")
            row = m.add_linear_constraint(lb=-float(problem.installed_racks[h]), name=f"new_racks[h={h}]")
            row.set_coefficient(v, 1.0)
            row.set_coefficient(r, -1.0)
            new.append(v)
    if math.isfinite(problem.max_new_racks):
        row = m.add_linear_constraint(ub=problem.max_new_racks, name="max_new_racks")
        for v in new or racks:
            row.set_coefficient(v, 1.0)
    return new


# ---- (O) and (T)'s objective cap --------------------------------------------------------------------------------
def primary_terms(problem, racks, new=(), replicas=(), rented=()) -> list[tuple]:
    """(variable, coefficient) of (O)'s primary: p_h racks_h, or with an installed fleet (9) p'_h racks_h plus
    (p_h - p'_h) new_h; (11) c_j x_j for the columns with a cost of their own; (12) the chips rented."""
    p = primary_coefficients(problem)
    own = column_primary_coefficients(problem)
    rent = rent_primary_coefficients(problem)
    columns = ([(v, float(own[j])) for j, v in enumerate(replicas) if own[j] > 0]
               + [(v, float(rent[r])) for r, v in enumerate(rented)])
    if not new:
        return [(v, float(p[h])) for h, v in enumerate(racks)] + columns
    kept = kept_primary_coefficients(problem)
    return ([(v, float(kept[h])) for h, v in enumerate(racks)]
            + [(v, float(p[h] - kept[h])) for h, v in enumerate(new)] + columns)


def set_objective(m, problem, racks, replicas, shares=(), new=(), rented=()) -> float:
    """(O) divided by max p_h, less the revenue of the served shares under max_revenue (6); returns the divisor."""
    tie = rack_tie_coefficients(problem)
    replica_coef = replica_tie_coefficients(problem)
    scale = float(primary_coefficients(problem).max())
    m.objective.clear()
    m.objective.is_maximize = False
    for h, v in enumerate(racks):
        m.objective.set_linear_coefficient(v, float(tie[h] / scale))
    for j, v in enumerate(replicas):
        m.objective.set_linear_coefficient(v, float(replica_coef[j] / scale))
    for v, c in primary_terms(problem, racks, new, replicas, rented):
        m.objective.set_linear_coefficient(v, m.objective.get_linear_coefficient(v) + c / scale)
    for g, v in enumerate(shares):
        m.objective.set_linear_coefficient(v, float(-problem.group_value[g] / scale))
    return scale


def add_objective_cap(m, problem, built, value: float) -> None:
    """(T)'s row: the primary objective (less the revenue under max_revenue) at most ``value``, divided by max p_h
    like (O), with a relative 1e-9 of room for the solver's rounding."""
    scale = built.objective_scale
    room = 1e-9 * max(abs(value), scale)
    row = m.add_linear_constraint(ub=(value + room) / scale, name="tie_objective")
    for v, c in primary_terms(problem, built.racks, built.new, built.replicas, built.rented):
        row.set_coefficient(v, c / scale)
    for g, s in enumerate(built.shares):
        row.set_coefficient(s, float(-problem.group_value[g] / scale))
