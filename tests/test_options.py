"""The options engine's scheduling: workloads scored as jobs per system on numba's threads give the columns of one job
at a time, and a deadline between jobs names how many workloads were done."""

import math

import pytest

from planner.errors import PlannerError
from planner.fleet import options as O
from planner.fleet.problem import demands_of, scenario_options
from planner.scenario.loading import load_scenario

SCENARIO = "scenarios/mixed-site.yaml"  # five workloads, eight systems, drafters: jobs of uneven length


@pytest.fixture(scope="module")
def site():
    sc = load_scenario(SCENARIO)
    return sc, demands_of(sc), dict(sorted(sc.resolved_hardware().items()))


def same(a: O.Options, b: O.Options) -> bool:
    def equal(x, y):
        return x == y or (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y))

    return a.candidates_scored == b.candidates_scored and all(
        len(a.rows[c]) == len(b.rows[c]) and all(equal(x, y) for x, y in zip(a.rows[c], b.rows[c]))
        for c in O.COLUMNS)


def test_columns_do_not_depend_on_how_many_threads_score_them(site, monkeypatch):
    monkeypatch.setattr(O, "thread_count", lambda: 1)  # the scoring pool's workers (the kernels' threads apart)
    one = scenario_options(*site)
    monkeypatch.setattr(O, "thread_count", lambda: 4)
    four = scenario_options(*site)
    assert len(one) > 100 and same(one, four)


def test_columns_are_those_of_one_workload_and_one_job_at_a_time(site):
    sc, demands, hardware = site
    singles = [k for k in O.KINDS.values() if not k.pair]
    pairs = [k for k in O.KINDS.values() if k.pair]
    by_hand = O.Options()
    for d in demands:
        measured, system_jobs, pair_jobs = O.workload_jobs(
            d, sc.resolved_models(), hardware, singles, pairs, sc.measurements, sc.measurement_headroom,
            sc.efficiencies(hardware), sc.layout_rule())
        by_hand.extend(O.assembled(measured, [j() for j in system_jobs], [j() for j in pair_jobs]))
    assert same(by_hand.pareto_across_precisions(), scenario_options(*site))


def test_a_deadline_passed_before_scoring_names_no_workload_done(site):
    with pytest.raises(PlannerError, match=r"time limit ran out while scoring candidates \(0 of 5 workloads done\)"):
        scenario_options(*site, deadline=0.0)


def test_a_deadline_passed_after_the_first_workload_names_one_done(site, monkeypatch):
    sc, demands, hardware = site
    systems = len(O.single_kinds(demands[0], sc.resolved_models()[demands[0].model], hardware,
                                 [k for k in O.KINDS.values() if not k.pair]))
    jobs = systems + len(demands[0].variants())  # the first workload's system jobs and pair jobs
    calls = iter(range(10_000))

    class Clock:  # the first workload's jobs start before the deadline, every later one after it
        @staticmethod
        def monotonic():
            return 0.0 if next(calls) < jobs else 2.0

    monkeypatch.setattr(O, "time", Clock)
    monkeypatch.setattr(O, "thread_count", lambda: 1)  # one worker: the jobs start in the workloads' order
    with pytest.raises(PlannerError, match=r"\(1 of 5 workloads done\)"):
        scenario_options(*site, deadline=1.0)


def test_decode_and_colocated_scored_in_one_call_give_the_columns_of_two(site, monkeypatch):
    together = scenario_options(*site)
    one_at_a_time = O.system_for
    monkeypatch.setattr(O, "system_for", lambda *a, **k: one_at_a_time(*a, **dict(k, kinds=frozenset())))
    assert same(together, scenario_options(*site))
