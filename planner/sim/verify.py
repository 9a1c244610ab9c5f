"""Verification: a plan checked by simulation and, where a workload misses a target, repaired by holding more
capacity for it and solving again (docs/MODEL.md 16.5). ``planner solve`` makes the quick run of every plan
(``planner.sim.run.quick_windows``: seconds), ``solve --verify`` the thorough one (``planner simulate``'s windows).

The repair's knob is the workload's ``capacity_headroom`` (its pools sized for the peak x (1 + headroom)): the
honest remedy for pools that queue at the peak, and one the plan states. The first guess is square-root staffing:
a pool whose `a` streams (or prompts) are in service at the peak needs about `z sqrt(a)` more slots for only a
share `1 - q` of arrivals to wait, `z` the normal quantile of the workload's percentile `q`, so the headroom is
`z / sqrt(a)`; a workload that still fails gets twice its last increase, up to ``MAX_ROUNDS`` solves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import NormalDist

from planner.errors import InfeasibleError
from planner.fleet.problem import headroom_of
from planner.sim.run import BuildOutSimResult, SimResult, simulate

MAX_ROUNDS = 5  # solves in all, the first included
MIN_STEP = 0.02  # the least headroom a repair adds


@dataclass
class Round:
    plan: object  # a Plan or a BuildOutPlan
    simulation: SimResult | BuildOutSimResult
    headroom: dict  # workload -> capacity_headroom it was solved with

    def to_dict(self) -> dict:
        cost, key, _ = plan_cost(self.plan)
        return {"headroom": dict(self.headroom), "holds": self.simulation.holds,
                "failures": self.simulation.failures, "status": self.plan.status, key: cost}


def plan_cost(plan) -> tuple[float | None, str, str]:
    """(cost, its JSON key, its words): a single-period plan's USD a year, a build-out's net present cost."""
    if getattr(plan, "is_buildout", False):
        return plan.net_present_cost_usd, "net_present_cost_usd", "USD net present cost"
    return plan.objective_usd_per_year, "objective_usd_per_year", "USD a year"


@dataclass
class Verified:
    rounds: list[Round] = field(default_factory=list)
    unrepaired: str | None = None  # why the repair stopped short, where it did
    seed: int = 0
    quick: bool = True  # the quick run's windows (else planner simulate's)

    @property
    def plan(self):
        return self.rounds[-1].plan

    @property
    def simulation(self) -> SimResult | BuildOutSimResult:
        return self.rounds[-1].simulation

    @property
    def holds(self) -> bool:
        return self.simulation.holds

    @property
    def repaired(self) -> bool:
        return len(self.rounds) > 1

    @property
    def extra_cost(self) -> float | None:
        """What the repair added: the last plan's cost less the first's (USD a year, a build-out's net present)."""
        (first, _, _), (last, _, _) = plan_cost(self.rounds[0].plan), plan_cost(self.plan)
        return None if first is None or last is None else last - first

    def to_dict(self) -> dict:
        buildout = getattr(self.plan, "is_buildout", False)
        return {"holds": self.holds, "mode": "quick" if self.quick else "thorough", "seed": self.seed,
                "duration_s": simulated_s(self.simulation), "solves": len(self.rounds),
                "extra_cost_usd_per_year": None if buildout else self.extra_cost,
                "extra_net_present_cost_usd": self.extra_cost if buildout else None,
                "failures": list(self.simulation.failures),
                "repaired": self.repaired, "unrepaired": self.unrepaired,
                "rounds": [r.to_dict() for r in self.rounds],
                "simulation": self.simulation.to_dict(),
                "first_simulation": self.rounds[0].simulation.to_dict() if self.repaired else None}


def headroom_named(scenario, workload: str) -> float:
    return headroom_of(scenario, next(x for x in scenario.workloads if x.name == workload))


def first_step(concurrent_streams: float, percentile: float) -> float:
    """Square-root staffing: z / sqrt(streams in service at the peak), at least MIN_STEP."""
    z = NormalDist().inv_cdf(min(max(percentile, 0.5), 0.9999))
    streams = max(1.0, concurrent_streams)
    return max(MIN_STEP, z / math.sqrt(streams))


def next_headroom(scenario, simulation, steps: dict) -> dict:
    """The headroom each failing workload is solved with next (a build-out's: where it fares worst); ``steps``
    (workload -> last increase) is updated."""
    out = {}
    for w in simulation.workloads:
        if w.holds:
            continue
        step = steps.get(w.workload)
        if step is None:
            step = first_step(w.concurrent_streams, w.ttft_percentile / 100.0)
        else:
            step *= 2.0
        steps[w.workload] = step
        out[w.workload] = headroom_named(scenario, w.workload) + step
    return out


def simulated_s(sim) -> float:
    """Seconds of arrivals the simulation ran (the longest workload's; a build-out's longest period)."""
    runs = [r for _, _, r in sim.runs] if hasattr(sim, "runs") else [sim]
    return max((r.duration_s for r in runs), default=0.0)


def verify(scenario, solve, seed: int = 0, duration_s: float | None = None, trace=None, on_round=None,
           quick: bool = False, **solve_kwargs) -> Verified:
    """Solve, simulate, and while a workload misses a target raise its headroom and solve again (at most
    MAX_ROUNDS solves). ``solve`` is ``planner.fleet.solve.solve``; the last round is the answer, whether it
    holds or not. ``quick``: the quick run's windows (``planner.sim.run.quick_windows``)."""
    result = Verified(seed=int(seed), quick=quick)
    steps: dict = {}
    for k in range(MAX_ROUNDS):
        try:
            plan = solve(scenario, **solve_kwargs)
        except InfeasibleError as exc:
            if not result.rounds:
                raise
            result.unrepaired = (f"adding headroom for {', '.join(sorted(steps))} leaves no feasible fleet "
                                 f"({exc}); the last plan that solved is shown")
            break
        sim = simulate(plan, trace=trace, duration_s=duration_s, seed=seed, quick=quick)
        result.rounds.append(Round(plan, sim, current_headroom(scenario)))
        if on_round:
            on_round(k + 1, sim)
        if sim.holds or k + 1 == MAX_ROUNDS:
            break
        raised = next_headroom(scenario, sim, steps)
        scenario = scenario.with_({f"workloads.{name}.capacity_headroom": h for name, h in raised.items()})
    if not result.holds and result.unrepaired is None:
        result.unrepaired = f"targets still missed after {len(result.rounds)} solves with more headroom"
    return result


def round_lines(v: Verified) -> list[str]:
    """What each solve after the first raised and found, and what the repair cost, in a few lines (the verdict
    itself is the answer's ``verified:`` line, ``planner.report.summary.verified_words``)."""
    lines = []
    for k, r in enumerate(v.rounds[1:], start=2):
        raised = ", ".join(f"{w} {100 * h:.3g}%" for w, h in r.headroom.items() if h != v.rounds[0].headroom.get(w))
        lines.append(f"  solve {k}: headroom {raised}: " + ("holds" if r.simulation.holds else
                                                            "; ".join(r.simulation.failures)))
    if v.repaired:
        (cost0, _, unit), (cost, _, _) = plan_cost(v.rounds[0].plan), plan_cost(v.plan)
        lines.append(f"  the repaired plan costs {cost:,.0f} {unit} against {cost0:,.0f} "
                     f"({100 * (cost / cost0 - 1):+.2f}%)" if cost0 and cost else "")
    if v.unrepaired:
        lines.append(f"  not repaired: {v.unrepaired}")
    return [x for x in lines if x]


def current_headroom(scenario) -> dict:
    return {w.name: headroom_of(scenario, w) for w in scenario.workloads}
