"""Exact brute force for tiny fleet problems, the MILP's check that needs no solver (docs/OPTIMIZER.md, section 5).

Only problems whose columns all have integer replicas, and small: at most 2 million replica vectors and 2 million
rack vectors (in practice H <= 4 hardware types, J <= 6 columns, bounds of a dozen or so).

The jitted kernel works in two steps:

1. every integer replica vector x with 0 <= x_j <= U_j (U_j = ceil(demand_w / coverage_jw), the most over the
   rows j serves) is enumerated; those that cover every demand row are kept with the racks they need,
   need_h = ceil(sum_j chips_jh x_j / chips_per_rack_h);
2. every rack vector 0 <= racks_h <= B_h is enumerated (B_h: the supply cap, and the most racks of type h that
   any kept replica vector needs); one is feasible when it meets the power budget and the site's rack limit and
   holds at least one kept replica vector (need <= racks); the cheapest feasible one on each number of hardware
   types is kept (the first met, in odometer order with h = 0 fastest, among equal objectives). The answer is the
   cheapest on the fewest types among those of the optimal objective: the tie-break (T) of ``solvers.milp``.

Since every cost is positive, the best rack vector equals the need of some replica vector, which is what the
plain-Python twin :func:`brute_force_python` uses instead: it walks the replica vectors alone (itertools) and
prices each one's need. The two share no code; tests compare them on random tiny problems.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from solvers import robust
from solvers.formulation import system_index
from solvers.jit import njit
from solvers.objectives import objective

MAX_REPLICA_VECTORS = 2_000_000
MAX_RACK_VECTORS = 2_000_000
TOL = 1e-9


@dataclass(frozen=True, eq=False)
class BruteForceResult:
    """The optimum by enumeration: objective inf and feasible False when nothing covers the demand."""

    objective: float  # what the problem's objective minimises (solvers.objectives)
    racks: np.ndarray  # [H] int
    replicas: np.ndarray  # [J] int
    feasible: bool
    rack_vectors: int  # rack vectors the search walked (the product of B_h + 1; 0 for the twin, which walks none)
    covering_replica_vectors: int  # replica vectors that cover the demand
    objective_by_types: np.ndarray = field(default_factory=lambda: np.zeros(0))  # [H+1] best on exactly t types

    @property
    def types(self) -> int:
        """Hardware types the answer buys (the fewest of any optimal plan)."""
        return int((self.racks > 0).sum())


def fewest_types_answer(objective_by_types) -> tuple[float, int]:
    """(optimum, t): the best objective, and the fewest hardware types t of a plan that attains it (within a
    relative 1e-9 for rounding); (inf, -1) when none is feasible."""
    obj = np.asarray(objective_by_types, dtype=float)
    best = float(obj.min(initial=np.inf))
    if not math.isfinite(best):
        return best, -1
    return best, int(np.flatnonzero(obj <= best + 1e-9 * max(abs(best), 1.0))[0])


def replica_bounds(problem) -> np.ndarray:
    """U_j = max over the demand rows j serves of ceil(demand_w / coverage_jw); 0 where it serves none with demand."""
    u = np.zeros(problem.n_columns, dtype=np.int64)
    for j in range(problem.n_columns):
        for w in range(problem.n_workloads):
            if problem.coverage[j, w] > 0 and problem.demand[w] > 0:
                u[j] = max(u[j], math.ceil(problem.demand[w] / problem.coverage[j, w] - TOL))
    return u


def rack_bounds(problem, needs: np.ndarray) -> np.ndarray:
    """B_h = min(max_racks_h, the most racks of type h any covering replica vector needs): the optimum is one of
    those needs, so nothing is cut off."""
    most = needs.max(axis=0) if len(needs) else np.zeros(problem.n_hardware, dtype=np.int64)
    most = np.where(most > 0, np.maximum(most, np.ceil(problem.min_racks)), most)  # (7): a minimum purchase
    top = np.minimum(problem.max_racks, problem.max_new_racks) + problem.installed_racks  # (9): caps bind purchases
    return np.minimum(most, top).astype(np.int64)


def primary_costs(problem) -> np.ndarray:
    """p_h of the problem's objective (solvers.objectives)."""
    return objective(problem.objective).primary(problem)


def rent_costs(problem) -> np.ndarray:
    """(12): a rented chip in the objective's primary (0 under min_power)."""
    return objective(problem.objective).rent_primary(problem)


def column_costs(problem) -> np.ndarray:
    """c_j of (11), (13) and (14): each replica beyond its racks in the objective's primary (its peak watts beyond
    the racks' floor under min_power)."""
    return objective(problem.objective).column_primary(problem)


def kept_costs(problem) -> np.ndarray:
    """p'_h of an installed rack kept in service (solvers.milp (9)) in the objective's primary."""
    return objective(problem.objective).kept_primary(problem)


def sells(problem) -> bool:
    return objective(problem.objective).sells_shares


def _check_replicas(problem, u: np.ndarray) -> None:
    if not np.all(problem.integer_replicas):
        raise ValueError("brute force needs every column to have integer replicas")
    if problem.pools:
        raise ValueError("brute force does not enumerate replica pools (15): their shares are continuous")
    if float(np.prod(u + 1.0)) > MAX_REPLICA_VECTORS:
        raise ValueError(f"too big for brute force: {np.prod(u + 1.0):.0f} replica vectors")


def _check_racks(b: np.ndarray) -> None:
    if float(np.prod(b + 1.0)) > MAX_RACK_VECTORS:
        raise ValueError(f"too big for brute force: {np.prod(b + 1.0):.0f} rack vectors")


@njit
def covering_needs(coverage, chips, chips_per_rack, demand, replica_ub, row_group, group_value, sells_shares):
    """Step 1: (needs[K, H], replicas[K, J], credit[K]) of every integer replica vector within the bounds that
    covers demand. Under max_revenue (``sells_shares``) every vector is kept, and its credit is the revenue of the
    shares it serves, sum_g value_g min(1, served_w / demand_w over g's rows); else the credit is 0."""
    J, H, W = chips.shape[0], chips.shape[1], demand.shape[0]
    G = group_value.shape[0]
    total = 1
    for j in range(J):
        total *= replica_ub[j] + 1
    needs = np.zeros((total, H), dtype=np.int64)
    xs = np.zeros((total, J), dtype=np.int64)
    credit = np.zeros(total)
    share = np.ones(G)
    x = np.zeros(J, dtype=np.int64)
    served = np.zeros(W)
    used = np.zeros(H)
    k = 0
    for _ in range(total):
        served[:] = 0.0
        used[:] = 0.0
        for j in range(J):
            for w in range(W):
                served[w] += coverage[j, w] * x[j]
            for h in range(H):
                used[h] += chips[j, h] * x[j]
        covers = True
        share[:] = 1.0
        for w in range(W):
            if served[w] < demand[w] * (1.0 - 1e-9):
                covers = False
                share[row_group[w]] = min(share[row_group[w]], served[w] / demand[w])
        if covers or sells_shares:
            for h in range(H):
                needs[k, h] = np.int64(math.ceil(used[h] / chips_per_rack[h] - 1e-9))
            xs[k, :] = x
            if sells_shares:
                for g in range(G):
                    credit[k] += group_value[g] * share[g]
            k += 1
        for j in range(J):  # odometer, j = 0 fastest
            x[j] += 1
            if x[j] <= replica_ub[j]:
                break
            x[j] = 0
    return needs[:k], xs[:k], credit[:k]


@njit
def cheapest_rack_mix(primary, rack_power_w, rack_site, site_pue, site_budget_w, site_max_racks, system, rack_ub,
                      needs, credit, max_platforms, min_racks, kept, installed, max_new_racks, supply_cap, used,
                      chips_per_rack, rent_hw, rent_cost, rent_max, rent_group, above):
    """Step 2: (objective[t], racks[t, H], index[t] of a need the racks hold) of the cheapest feasible rack vector
    on exactly t = 0..K systems, its objective the racks' primary value less the largest credit among the needs
    they hold; (inf, zeros, -1) where none. Feasible includes (7): at most ``max_platforms`` systems bought, each
    bought system at least ``min_racks`` over its sites; (9): the first ``installed`` racks of a type cost ``kept``
    each, the rest ``primary``, at most ``max_new_racks`` racks beyond the installed ones and (16) a system's new
    racks over its sites within its ``supply_cap``; (12): a need's chips (``used``) beyond its racks may be rented,
    from the offers (``rent_hw``, ``rent_cost`` per chip, ``rent_max``, cheapest first) of its type, an offer rented
    at several sites (``rent_group``) within its limit over them (the types of one system at its sites have the same
    offers at the same prices, so cheapest first over the types is the cheapest rent); (13, 16):
    ``rack_power_w`` is each rack's floor, a need's replicas draw ``above[k, s]`` beyond it at peak at site s, and
    each site's facility power (its pue) and racks stay within its own limits."""
    H, S = primary.shape[0], site_pue.shape[0]
    K = supply_cap.shape[0]
    total = 1
    for h in range(H):
        total *= rack_ub[h] + 1
    r = np.zeros(H, dtype=np.int64)
    best = np.full(K + 1, np.inf)
    best_r = np.zeros((K + 1, H), dtype=np.int64)
    best_k = np.full(K + 1, -1, dtype=np.int64)
    power = np.zeros(S)
    count = np.zeros(S)
    of_system = np.zeros(K)
    new_of_system = np.zeros(K)
    left = np.zeros(int(rent_group.max()) + 1 if rent_group.shape[0] else 0)
    for _ in range(total):
        obj, short, new = 0.0, False, 0.0
        power[:] = 0.0
        count[:] = 0.0
        of_system[:] = 0.0
        new_of_system[:] = 0.0
        for h in range(H):
            extra = max(r[h] - installed[h], 0.0)
            obj += kept[h] * r[h] + (primary[h] - kept[h]) * extra
            new += extra
            power[rack_site[h]] += rack_power_w[h] * r[h]
            count[rack_site[h]] += r[h]
            of_system[system[h]] += r[h]
            new_of_system[system[h]] += extra
        types = 0
        for k in range(K):
            if of_system[k] > 0:
                types += 1
                short = short or of_system[k] < min_racks[k]
            short = short or new_of_system[k] > supply_cap[k] + 1e-9
        for s in range(S):
            short = short or site_pue[s] * power[s] > site_budget_w[s] * (1.0 + 1e-9) or count[s] > site_max_racks[s] + 1e-9
        if not short and types <= max_platforms and new <= max_new_racks + 1e-9:
            for k in range(needs.shape[0]):
                if obj - credit[k] >= best[types]:
                    continue
                over = False
                for s in range(S):
                    over = over or site_pue[s] * (power[s] + above[k, s]) > site_budget_w[s] * (1.0 + 1e-9)
                if over:
                    continue
                holds, rent = True, 0.0
                for o in range(rent_hw.shape[0]):
                    left[rent_group[o]] = rent_max[o]
                for h in range(H):
                    if needs[k, h] <= r[h]:
                        continue
                    lack = used[k, h] - chips_per_rack[h] * r[h]
                    for o in range(rent_hw.shape[0]):
                        if rent_hw[o] == h and lack > 1e-9:
                            take = min(lack, left[rent_group[o]])
                            rent += take * rent_cost[o]
                            lack -= take
                            left[rent_group[o]] -= take
                    if lack > 1e-9:
                        holds = False
                        break
                if holds and obj + rent - credit[k] < best[types]:
                    best[types], best_k[types] = obj + rent - credit[k], k
                    best_r[types, :] = r
        for h in range(H):  # odometer, h = 0 fastest
            r[h] += 1
            if r[h] <= rack_ub[h]:
                break
            r[h] = 0
    return best, best_r, best_k


def system_arrays(problem) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(16) ([H] each type's system 0..K-1, [K] each system's minimum purchase, [K] its supply cap: the largest
    of its types')."""
    index = system_index(problem)
    first = np.array([int(np.flatnonzero(index == k)[0]) for k in range(int(index.max(initial=-1)) + 1)],
                     dtype=np.int64)
    cap = np.array([problem.max_racks[index == k].max() for k in range(len(first))], dtype=float)
    return index, problem.min_racks[first].astype(float), cap


def column_site_power(problem, xs: np.ndarray) -> np.ndarray:
    """[K, S] (13, 16) each replica vector's draw beyond its racks' floor at each site."""
    out = np.zeros((xs.shape[0], problem.n_sites))
    where = problem.column_site
    for s in range(problem.n_sites):
        out[:, s] = xs @ (problem.replica_power_w * (where == s))
    return out


def brute_force(problem, rack_ub=None, replica_ub=None) -> BruteForceResult:
    """The exact optimum of a tiny all-integer FleetProblem by enumeration (jitted), on the fewest types."""
    u = replica_bounds(problem) if replica_ub is None else np.asarray(replica_ub, dtype=np.int64)
    _check_replicas(problem, u)
    needs, xs, credit = covering_needs(problem.coverage, problem.chips, problem.chips_per_rack, problem.demand, u,
                                       problem.row_group, problem.group_value, sells(problem))
    credit = credit - xs @ column_costs(problem)  # (11): a replica vector's own cost is a negative credit
    b = rack_bounds(problem, needs) if rack_ub is None else np.minimum(
        rack_ub, problem.max_racks + problem.installed_racks).astype(np.int64)
    _check_racks(b)
    order = np.argsort(rent_costs(problem), kind="stable")  # (12): the cheapest offer of a type first
    system, least, cap = system_arrays(problem)
    by_types, racks, ks = cheapest_rack_mix(primary_costs(problem), problem.floor_power_w, problem.rack_sites,
                                            problem.site_pues, problem.site_budgets_w, problem.site_rack_limits,
                                            system, b, needs, credit, float(problem.max_platforms), least,
                                            kept_costs(problem), problem.installed_racks,
                                            float(problem.max_new_racks), cap, (xs @ problem.chips).astype(float),
                                            problem.chips_per_rack, problem.rent_hardware[order],
                                            rent_costs(problem)[order], problem.rent_max_chips[order],
                                            problem.rent_offers[order], column_site_power(problem, xs))
    best, t = fewest_types_answer(by_types)
    if t < 0:
        return BruteForceResult(best, np.zeros(problem.n_hardware, dtype=np.int64),
                                np.zeros(problem.n_columns, dtype=np.int64), False, int(np.prod(b + 1)),
                                int(needs.shape[0]), by_types)
    return BruteForceResult(float(by_types[t]), racks[t].copy(), xs[ks[t]].copy(), True, int(np.prod(b + 1)),
                            int(needs.shape[0]), by_types)


def brute_force_python(problem, rack_ub=None, replica_ub=None) -> BruteForceResult:
    """Plain-Python twin: the cheapest need on each number of types over every covering replica vector (itertools,
    no numpy in the loop); under max_revenue over every replica vector, each credited with the revenue of the
    shares it serves."""
    u = replica_bounds(problem) if replica_ub is None else np.asarray(replica_ub, dtype=np.int64)
    _check_replicas(problem, u)
    top = problem.max_racks + problem.installed_racks  # (9): the supply caps bind purchases
    b = top if rack_ub is None else np.minimum(rack_ub, top)
    H, W = problem.n_hardware, problem.n_workloads
    kept, installed = kept_costs(problem).tolist(), problem.installed_racks.tolist()
    own = column_costs(problem).tolist()
    offers = [sorted((float(c), float(m), int(o)) for hh, c, m, o in zip(
        problem.rent_hardware.tolist(), rent_costs(problem).tolist(), problem.rent_max_chips.tolist(),
        problem.rent_offers.tolist()) if hh == h) for h in range(problem.n_hardware)]
    chips, coverage = problem.chips.tolist(), problem.coverage.tolist()
    cpr, power, cost = problem.chips_per_rack.tolist(), problem.floor_power_w.tolist(), primary_costs(problem).tolist()
    above = problem.replica_power_w.tolist()
    demand, group, value = problem.demand.tolist(), problem.row_group.tolist(), problem.group_value.tolist()
    # (16): each type's site and system; a system's supply cap and minimum purchase span its sites
    site, system = problem.rack_sites.tolist(), problem.rack_systems.tolist()
    column_site = problem.column_site.tolist()
    systems = sorted(set(system), key=system.index)
    cap = {k: max(float(c) for c, at in zip(problem.max_racks, system) if at == k) for k in systems}
    least = {k: float(problem.min_racks[system.index(k)]) for k in systems}
    best = [math.inf] * (len(systems) + 1)
    best_r, best_x, covering = [[0] * H] * (len(systems) + 1), [[0] * problem.n_columns] * (len(systems) + 1), 0
    for x in itertools.product(*(range(int(n) + 1) for n in u)):
        served = [sum(coverage[j][w] * n for j, n in enumerate(x)) for w in range(W)]
        short = [w for w in range(W) if served[w] < demand[w] * (1.0 - 1e-9)]
        if short and not sells(problem):
            continue
        share = {g: min([1.0] + [served[w] / demand[w] for w in short if group[w] == g]) for g in range(len(value))}
        credit = sum(value[g] * share[g] for g in share) if sells(problem) else 0.0
        covering += 1
        use = [sum(chips[j][h] * n for j, n in enumerate(x)) for h in range(H)]
        full = [math.ceil(u / cpr[h] - 1e-9) for h, u in enumerate(use)]
        # (12): a type with rental offers may hold fewer racks than its chips need and rent the rest; (7, 16): a
        # system below its minimum purchase over its sites may take more racks at any of them
        choices = [range(n + (int(math.ceil(least[system[h]])) if least[system[h]] > 0 else 0) + 1)
                   if offers[h] or least[system[h]] > 0 else [n] for h, n in enumerate(full)]
        for racks in itertools.product(*choices):
            need = list(racks)
            if any(n < f and not offers[h] for h, (n, f) in enumerate(zip(need, full))):
                continue
            rent = 0.0
            left = {o: most for offered in offers for _, most, o in offered}  # (12, 16): an offer over its sites
            for h in range(H):
                lack = use[h] - cpr[h] * need[h]
                for price, _, o in offers[h]:
                    take = min(max(lack, 0.0), left[o])
                    rent, lack, left[o] = rent + take * price, lack - take, left[o] - take
                if lack > 1e-9:
                    rent = math.inf
            of_system = {k: sum(n for h, n in enumerate(need) if system[h] == k) for k in systems}
            new = [max(n - i, 0.0) for n, i in zip(need, installed)]
            new_of_system = {k: sum(e for h, e in enumerate(new) if system[h] == k) for k in systems}
            types = sum(n > 0 for n in of_system.values())
            if (math.isinf(rent) or any(n > b[h] for h, n in enumerate(need)) or types > problem.max_platforms
                    or any(0 < of_system[k] < least[k] for k in systems)
                    or any(new_of_system[k] > cap[k] + 1e-9 for k in systems)):
                continue
            fits = True
            for s in range(problem.n_sites):  # (13) at peak, (16) each site within its own limits
                drawn = (sum(p * n for p, n, at in zip(power, need, site) if at == s)
                         + sum(a * n for a, n, at in zip(above, x, column_site) if at == s))
                fits = fits and problem.site_pues[s] * drawn <= problem.site_budgets_w[s] * (1.0 + 1e-9)
                fits = fits and sum(n for n, at in zip(need, site) if at == s) <= problem.site_rack_limits[s] + 1e-9
            if not fits or sum(new) > problem.max_new_racks + 1e-9:
                continue
            obj = (sum(k * n + (c - k) * e for k, c, n, e in zip(kept, cost, need, new))
                   + sum(c * n for c, n in zip(own, x)) + rent - credit)
            if obj < best[types]:
                best[types], best_r[types], best_x[types] = obj, need, list(x)
    _, t = fewest_types_answer(best)
    if t < 0:
        return BruteForceResult(math.inf, np.zeros(H, dtype=np.int64), np.zeros(problem.n_columns, dtype=np.int64),
                                False, 0, covering, np.array(best, dtype=float))
    return BruteForceResult(float(best[t]), np.array(best_r[t], dtype=np.int64), np.array(best_x[t], dtype=np.int64),
                            True, 0, covering, np.array(best, dtype=float))


def within_sites(problem, t: int, installed: np.ndarray) -> bool:
    """A build-out's racks ``installed`` [H] in period ``t`` within (5) each system's cap over its sites and (3, 4)
    each site's power and floor space (8; one site: the site's)."""
    if any(installed[m].sum() > problem.max_racks[m].max() + 1e-9 for m in problem.systems):
        return False
    for k in range(problem.n_sites):
        at = problem.rack_sites == k
        if installed[at].sum() > problem.site_rack_limits[t, k] + 1e-9:
            return False
        if problem.site_pues[k] * float(problem.rack_power_w[at] @ installed[at]) > problem.site_budgets_w[t, k] * (
                1 + 1e-9):
            return False
    return True


def buildout_brute_force(problem, most_racks: int = 3) -> tuple[float, np.ndarray]:
    """The least expected present cost of a tiny all-integer build-out (``solvers.multiperiod``) by enumeration,
    and its purchases [T, S, H]: every first order, then in each scenario every later order, with at most
    ``most_racks`` racks of a type bought in a period; a plan holds when each period's installed racks hold a
    replica vector that covers its demand (step 1 of ``brute_force`` on that period's demand) within the site's
    limits. (inf, zeros) when nothing holds."""
    T, S, H = problem.n_periods, problem.n_scenarios, problem.n_hardware
    if not np.all(problem.integer_replicas):
        raise ValueError("brute force needs every column to have integer replicas")
    if (most_racks + 1) ** (H * T) > MAX_RACK_VECTORS:
        raise ValueError("too big for brute force")
    needs = {}
    for s in range(S):
        for t in range(T):
            d = problem.demand[s, t]
            u = np.zeros(problem.n_columns, dtype=np.int64)
            for j in range(problem.n_columns):
                for w in range(len(d)):
                    if problem.coverage[j, w] > 0 and d[w] > 0:
                        u[j] = max(u[j], math.ceil(d[w] / problem.coverage[j, w] - TOL))
            n, _, _ = covering_needs(problem.coverage, problem.chips, problem.chips_per_rack, d, u,
                                     np.arange(len(d)), np.zeros(len(d)), False)
            needs[s, t] = n
    orders = [np.array(o, dtype=float) for o in itertools.product(range(most_racks + 1), repeat=H)]
    cost = np.where(problem.available, problem.buy_cost, 0.0)

    def holds(t, s, installed) -> bool:
        if not within_sites(problem, t, installed):
            return False
        n = needs[s, t]
        return bool(len(n)) and bool(np.any(np.all(n <= installed + 1e-9, axis=1)))

    def allowed(t, order) -> bool:
        return not np.any((order > 0) & ~problem.available[t])

    def best_after(t, s, bought) -> tuple[float, list]:
        """Least cost of periods t.. of scenario s given the purchases so far ([T', H] list)."""
        if t == T:
            return 0.0, []
        best, plan = math.inf, []
        for order in orders:
            if not allowed(t, order):
                continue
            rows = bought + [order]
            installed = problem.existing[t] + sum(rows[u] for u in range(t + 1) if problem.alive[u, t])
            if not holds(t, s, installed):
                continue
            rest, later = best_after(t + 1, s, rows)
            total = float(cost[t] @ order) + rest
            if total < best - 1e-9:
                best, plan = total, [order] + later
        return best, plan

    best, buys = math.inf, np.zeros((T, S, H))
    for first in orders:
        if not allowed(0, first) or (problem.fixed_first is not None and not np.allclose(first, problem.fixed_first)):
            continue
        installed = problem.existing[0] + first
        if not all(holds(0, s, installed) for s in range(S)):
            continue
        total, plans = float(cost[0] @ first), []
        for s in range(S):
            rest, later = best_after(1, s, [first])
            total += problem.probability[s] * rest
            plans.append(later)
        if total < best - 1e-9:
            best = total
            buys = np.zeros((T, S, H))
            for s in range(S):
                buys[0, s] = first
                for k, order in enumerate(plans[s]):
                    buys[k + 1, s] = order
    return best, buys


def robust_brute_force(problem) -> tuple[float, np.ndarray]:
    """The least statistic (mean or percentile) of a tiny all-integer robust problem (``solvers.robust``) by
    enumeration, and its fleet: every rack vector within the samples' bounds (solvers.robust.rack_upper_bounds)
    and (7)'s platform rules (with a late premium, on what each sample installs, its late racks with it). In each sample the fleet's cost is its racks' plus, with a late premium e, the
    cheapest late racks (1 + e) p_s max(need - racks, 0) over the sample's covering needs (step 1 of
    ``brute_force``) whose installed racks fit its supply caps, power budget and rack limit; without a premium the
    fleet must hold a need as bought. Among equal statistics the lower mean wins (as (Q2) of solvers.robust).
    (inf, zeros) when no fleet serves every sample; min_cost and min_power only."""
    samples = problem.samples
    if any(sells(p) for p in samples):
        raise ValueError("the robust brute force does not sell shares (max_revenue)")
    if not all(np.all(p.integer_replicas) for p in samples):
        raise ValueError("brute force needs every column to have integer replicas")
    H = problem.n_hardware
    top = robust.rack_upper_bounds(problem).astype(np.int64)
    if float(np.prod(top + 1.0)) > MAX_RACK_VECTORS:
        raise ValueError("too big for brute force")
    needs = []
    for p in samples:
        n, _, _ = covering_needs(p.coverage, p.chips, p.chips_per_rack, p.demand, replica_bounds(p),
                                 np.arange(p.n_workloads), np.zeros(p.n_workloads), False)
        needs.append(n.astype(float))
    primary = np.array([primary_costs(p) for p in samples])
    rules, late = samples[0], problem.late_premium

    def fits(p, installed) -> bool:
        """Within each type's supply cap and each system's over its sites, each site's rack limit and power budget
        (solvers.milp (16); one site: the scenario's)."""
        if np.any(installed > p.max_racks + 1e-9):
            return False
        if any(installed[m].sum() > p.max_racks[m].max() + 1e-9 for m in p.systems):
            return False
        racks = np.bincount(p.rack_sites, weights=installed, minlength=p.n_sites)
        power = np.bincount(p.rack_sites, weights=p.rack_power_w * installed, minlength=p.n_sites)
        return bool(np.all(racks <= p.site_rack_limits + 1e-9)
                    and np.all(p.site_pues * power <= p.site_budgets_w * (1 + 1e-9)))

    def platforms_hold(p, installed) -> bool:
        """(7, 16): at most max_platforms systems, each bought at least its minimum over its sites."""
        of_system = np.bincount(p.rack_systems, weights=installed)
        least = np.zeros(len(of_system))
        np.maximum.at(least, p.rack_systems, p.min_racks)
        bought = of_system > 0.5
        return bool(bought.sum() <= p.max_platforms and np.all(of_system[bought] >= least[bought] - 1e-9))

    def sample_cost(s, p, racks) -> float:
        best = math.inf
        for n in needs[s]:
            extra = np.maximum(n - racks, 0.0)
            if (late is None and np.any(extra > 0)) or not fits(p, racks + extra) or not platforms_hold(p, racks + extra):
                continue
            best = min(best, 0.0 if late is None else (1.0 + late) * float(primary[s] @ extra))
        return float(primary[s] @ racks) + best

    best, best_mean, fleet = math.inf, math.inf, np.zeros(H)
    for r in itertools.product(*(range(int(t) + 1) for t in top)):
        racks = np.array(r, dtype=float)
        if late is None and not platforms_hold(rules, racks):  # with late racks, each sample's installed holds them
            continue
        if not all(fits(p, racks) for p in samples):
            continue
        f = np.array([sample_cost(s, p, racks) for s, p in enumerate(samples)])
        if not np.all(np.isfinite(f)):
            continue
        value, mean = robust.sample_statistic(f, problem.weight, problem.percentile), float(problem.weight @ f)
        tol = 1e-9 * max(1.0, abs(value))
        if value < best - tol or (value <= best + tol and mean < best_mean - 1e-9 * max(1.0, abs(mean))):
            best, best_mean, fleet = value, mean, racks
    return best, fleet
