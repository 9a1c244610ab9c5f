"""Uncertainty you can see (docs/MODEL.md 11): estimated figures and efficiencies carry ranges with a basis, and
estimate and frontier report the band they put around a prediction."""

from __future__ import annotations

import pytest

from planner import catalog
from planner.catalog import Figure
from planner.perf.estimate import estimate
from planner.perf.frontier import frontier
from planner.perf.uncertainty import efficiency_ranges, figure_range, uncertain_quantities


def test_estimated_figures_take_their_kinds_range_and_stated_ones_none():
    est = Figure(value=100.0, source="x", confidence="estimate", basis="guess")
    assert figure_range(est, "latency_s")[:2] == (50.0, 200.0)
    assert figure_range(Figure(value=100.0, source="x", confidence="official"), "latency_s") is None
    own = Figure(value=100.0, source="x", confidence="official", low=90.0, high=120.0)
    assert figure_range(own, "latency_s")[:2] == (90.0, 120.0)
    with pytest.raises(ValueError):
        Figure(value=100.0, source="x", confidence="official", low=120.0)


def test_efficiency_ranges_stay_inside_the_physical_bounds():
    for family in ("nvidia-gpu", "groq-lpu", "cerebras-wafer", "amd-gpu"):
        for q in efficiency_ranges(family):
            assert q.low <= q.value <= q.high and q.basis
            if q.name.endswith("bandwidth_efficiency"):
                assert q.high <= 0.95
            if q.name.endswith("usable_memory_fraction"):
                assert q.high <= 1.0


def test_every_system_has_some_uncertainty():
    for hw in catalog.hardware_catalog().values():
        names = [q.name for q in uncertain_quantities(hw, hw.precision_or_best(None))]
        assert any(".bandwidth_efficiency" in n for n in names), hw.id


def test_estimate_band_holds_the_central_figure_and_names_what_moves_it():
    e = estimate("llama-3.1-70b", "groq3-lpx")
    for key in ("tps_per_user", "output_tokens_per_s_per_mw"):
        b = e.band[key]
        assert b["low"] <= getattr(e, key) * (1 + 1e-12) and b["high"] >= getattr(e, key) * (1 - 1e-12)
        assert b["low"] < b["high"] and b["widest"]
    # the LPX per-layer cost is unpublished (inherited from GroqChip v1): it moves the per-user speed most
    assert e.band["tps_per_user"]["widest"] == "groq3-lpu.kernel_latency_s"


def test_frontier_points_carry_bands():
    points = frontier("llama-3.1-8b", ["hgx-h200"])
    assert points
    for p in points:
        assert p["tps_per_user_low"] <= p["tps_per_user"] * (1 + 1e-12) <= p["tps_per_user_high"] * (1 + 1e-12)
        assert (p["output_tokens_per_s_per_mw_low"] <= p["output_tokens_per_s_per_mw"] * (1 + 1e-12)
                <= p["output_tokens_per_s_per_mw_high"] * (1 + 1e-12))
        assert p["widest"]


def test_inherited_efficiencies_are_carried_with_a_priors_range():
    """A family with no measurement of its own (SN50, TPU, Trainium, AMD) carries its parent's fitted values: as
    estimates, with the prior's factor-of-two range, not the fitted family's narrower one."""
    parent = {q.name.split(".", 1)[1]: q for q in efficiency_ranges("sambanova-rdu")}
    for q in efficiency_ranges("sambanova-rdu2"):
        name = q.name.split(".", 1)[1]
        assert q.value == parent[name].value
        assert q.basis.startswith("carried from sambanova-rdu")
        if name == "kernel_latency_s":  # fitted on SN40L: 0.75-1.33 there, 0.5-2 when carried
            assert parent[name].low == pytest.approx(0.75 * q.value)
            assert q.low == pytest.approx(0.5 * q.value) and q.high == pytest.approx(2.0 * q.value)


def test_the_bands_batched_kernel_gives_each_systems_own_point():
    """colocated_point_per_hardware (the frontier bands' one call per point) equals colocated_points on each
    perturbed system alone, to the bit, on random layouts, batches and perturbations."""
    import numpy as np

    from planner.catalog import get_hardware, get_model
    from planner.perf.pack import hardware_vector, model_vector, workload_vector
    from planner.perf.uncertainty import perturbed, uncertain_quantities
    from solvers.perf.sweep import colocated_point_per_hardware, colocated_points

    rng = np.random.default_rng(11)
    for model_id, hw_id, prec in (("llama-3.1-70b", "hgx-h100", "fp8"), ("deepseek-r1", "gb200-nvl72", "fp4")):
        model, hw = get_model(model_id), get_hardware(hw_id)
        mv, hv = model_vector(model), hardware_vector(hw, prec)
        vectors = perturbed(hv, uncertain_quantities(hw, prec))
        for _ in range(5):
            wl = workload_vector(float(rng.integers(100, 8000)), float(rng.integers(50, 2000)))
            layout = np.array([float(rng.choice([1, 2, 4, 8])), float(rng.choice([1, 2])), float(rng.integers(0, 2))])
            batch, k, a = float(rng.integers(1, 512)), float(rng.integers(0, 4)), float(rng.uniform(1.0, 2.5))
            many = colocated_point_per_hardware(mv, vectors, wl, layout, batch, k, a)
            for j, v in enumerate(vectors):
                alone = colocated_points(mv, v, wl, layout.reshape(1, 3), np.array([batch]), k, a)[0]
                assert np.array_equal(many[j], alone, equal_nan=True), (model_id, j)
