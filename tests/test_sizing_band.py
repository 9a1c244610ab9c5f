"""The percentile sizing against the simulator on random small sites (issue 41): each site's plan, sized by the
closed forms (decode and colocated pools as queues of batch slots, prefill pools as M/G/c queues of prompts, the
colocated streams' prefill chunks over their answers' lengths), is simulated, and at each workload's percentile
its speed and TTFT land within BAND of the tier and the target, with at least the percentile less SHARE_BAND of
its requests meeting both. The band is the closed forms' error where they are approximations (Allen-Cunneen's
exponential tail for a prompt pool of one or two servers with spread prompts: a p99 TTFT 3% over its target on
one site) and the sampling error of a few thousand requests at p99; the sizing is conservative elsewhere
(docs/OPTIMIZER.md 18 lists what the simulator measured on these sites)."""

from __future__ import annotations

import pytest

from planner.errors import InfeasibleError
from planner.fleet.solve import solve
from planner.scenario import scenario_from_yaml
from planner.sim import simulate
from tests.generators import random_small_site

BAND = 0.05  # speed at least the tier less 5%, TTFT at most the target plus 5%, at the percentile
SHARE_BAND = 0.01  # requests meeting both: at least the percentile less one point
SITES = range(24)


@pytest.fixture(scope="module")
def outcomes():
    out = {}
    for seed in SITES:
        try:
            plan = solve(scenario_from_yaml(random_small_site(seed)))
        except InfeasibleError as e:  # a tier no system reaches for the model: said, and nothing to simulate
            assert "reaches" in str(e) or "usable" in str(e), str(e)
            out[seed] = None
            continue
        out[seed] = simulate(plan, seed=1).to_dict()["workloads"]
    return out


@pytest.mark.integration
def test_most_random_small_sites_have_a_plan(outcomes):
    assert sum(v is not None for v in outcomes.values()) >= 18


@pytest.mark.integration
@pytest.mark.parametrize("seed", SITES)
def test_the_plan_holds_its_percentile_in_simulation_within_the_band(outcomes, seed):
    for w in outcomes[seed] or []:
        name, q = w["workload"], w["ttft_percentile"]
        assert w["tps_per_user_at_target_percentile"] >= w["min_tps_per_user"] * (1 - BAND), (name, w)
        assert w["ttft_at_target_percentile_s"] <= w["ttft_target_s"] * (1 + BAND), (name, w)
        assert w["slo_attainment"] >= q / 100 - SHARE_BAND, (name, w)
