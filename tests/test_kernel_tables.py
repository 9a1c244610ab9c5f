"""Measured kernel tables reduced to the model's parameters (planner/perf/kernel_tables.py, docs/MODEL.md 5.5): each
form's fit recovers the parameters that made a synthetic table, the generations' parameters are the medians and
ratios the docstring states, the shipped efficiencies are the derived ones, and the command says what it needs."""

import math

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.perf import calibration, kernel_tables as K
from planner.perf.pack import efficiency_table

PEAKS = {"memory": 4.0e12, "bf16": 1.0e15, "fp8": 2.0e15, "fp4": 4.0e15, "w4a16": 1.0e15}


def gemm_table(fixed, bw, comp):
    rows = []
    for m in (1, 8, 64, 256, 1024, 4096, 16384):
        for n, k in ((4096, 4096), (8192, 2048), (16384, 8192), (2048, 7168)):
            for dtype, (_, wb, ab) in (("bfloat16", K.FORMATS["bfloat16"]), ("fp8", K.FORMATS["fp8"])):
                peak = PEAKS["bf16" if dtype == "bfloat16" else "fp8"]
                mem = (n * k * wb + m * k * ab + m * n * 2.0) / PEAKS["memory"]
                t = fixed + max(mem / bw, 2.0 * m * n * k / peak / comp)
                rows.append({"gemm_dtype": dtype, "m": m, "n": n, "k": k, "latency": t * 1e3})
    return pl.DataFrame(rows)


def test_a_gemm_tables_fit_recovers_the_roofline_that_made_it():
    fits = K.fit_gemm(gemm_table(4e-6, 0.8, 0.7), PEAKS)
    for fmt in ("bf16", "fp8"):
        assert fits[fmt]["fixed_s"] == pytest.approx(4e-6, rel=0.02)
        assert fits[fmt]["bandwidth_efficiency"] == pytest.approx(0.8, rel=0.01)
        assert fits[fmt]["compute_efficiency"] == pytest.approx(0.7, rel=0.01)
        assert fits[fmt]["median_error"] == pytest.approx(1.0, abs=0.005)


def test_an_attention_tables_fit_recovers_its_fixed_per_stream_and_bandwidth_terms():
    rows = []
    for b in (1, 4, 16, 64, 256):
        for s in (128, 1024, 8192, 32768):
            for kv, nbytes in (("bfloat16", 2.0), ("fp8", 1.0)):
                mem = b * s * 2 * 8 * 128 * nbytes / PEAKS["memory"]
                t = 1e-5 + 5e-8 * b + max(mem / 0.85, b * s * 4 * 64 * 128 / PEAKS["bf16"])
                rows.append({"kv_cache_dtype": kv, "window_size": 0, "batch_size": b, "step": s - 1,
                             "num_heads": 64, "num_key_value_heads": 8, "head_dim": 128, "latency": t * 1e3})
    fits = K.fit_attention(pl.DataFrame(rows), PEAKS)
    assert fits["bf16"]["stream_s"] == pytest.approx(5e-8, rel=0.02)
    assert fits["fp8"]["bandwidth_efficiency"] == pytest.approx(0.85, rel=0.01)


def test_an_allreduce_fit_is_a_latency_and_a_bandwidth():
    sizes = np.array([2.0 ** e for e in range(8, 28)])
    t = 4e-6 + 2 * 7 / 8 * sizes * 2.0 / 4e11
    fit = K.fit_allreduce(pl.DataFrame({"num_gpus": [8] * len(sizes), "allreduce_dtype": ["bfloat16"] * len(sizes),
                                        "message_size": sizes.astype(int), "latency": t * 1e3}))
    assert fit["latency_s"] == pytest.approx(4e-6, rel=1e-3)
    assert fit["bandwidth_bytes_per_s"] == pytest.approx(4e11, rel=1e-3)


def test_generation_parameters_are_the_medians_and_ratios_of_the_fits():
    # two devices of one generation: bandwidth the median (mean of two), the FP8 factor the faster FP8 GEMM over
    # the 16-bit one, the FP8 grouped factor the block-scaled MoE layer's share over that dense share
    def device(bw):
        return {"generation": "g", "engines": {"trtllm": {
            "gemm": {"version": "1", "bf16": {"bandwidth_efficiency": bw, "compute_efficiency": 0.8, "fixed_s": 4e-6},
                     "fp8": {"compute_efficiency": 0.4}, "fp8_block": {"compute_efficiency": 0.6}},
            "moe": {"version": "1", "bf16": {"compute_efficiency": 0.4}, "fp8_block": {"compute_efficiency": 0.15},
                    "w4a16": {"compute_efficiency": 0.2}},
            "attention": {"version": "1", "fp8": {"stream_s": 6e-8}},
            "allreduce": {"version": "1", "latency_s": 5e-6}}}}
    g = K.generation_parameters({"a": device(0.7), "b": device(0.9)})["g"]
    assert g["bandwidth_efficiency"] == pytest.approx(0.8)
    assert g["fp8_flops_factor"] == pytest.approx(0.75)
    assert g["grouped_gemm_factor"] == pytest.approx(0.5)
    assert g["fp8_grouped_gemm_factor"] == pytest.approx(0.25)
    assert g["w4a16_flops_factor"] == pytest.approx(0.5)
    assert g["kernel_latency_s"] == 4e-6 and g["collective_latency_s"] == 5e-6 and g["attention_stream_s"] == 6e-8


def test_the_shipped_kernel_parameters_are_the_derived_ones():
    """data/efficiency.yaml's NVIDIA entries hold data/measured_kernels.yaml's values, but for the parameters the
    end-to-end calibration fits there (whose measured value bounds them from below)."""
    derived, table, fits = K.read_measured(), efficiency_table(), calibration.calibration_data()["fit"]
    assert derived["source"]["licence"] == "Apache-2.0" and derived["source"]["package"] == "aiconfigurator-core"
    for generation, params in derived["generations"].items():
        key = "nvidia-gpu" if generation == K.FAMILY_GENERATION else f"nvidia-gpu/{generation}"
        fitted = set(fits.get(key, {}).get("params", ()))
        for name, value in params.items():
            if name in fitted:
                assert table[key][name]["value"] >= calibration.fit_spec(key)[1][name][0]
            elif name == "kernel_latency_s" and K.engine_boundary(table, key, derived, fits) is not None:
                ratio, _ = K.engine_boundary(table, key, derived, fits)
                assert ratio > 1.0  # an engine's kernel boundary costs at least the kernel's own fixed time
                assert table[key][name]["value"] == pytest.approx(value * ratio, rel=1e-3), (key, name)
            else:
                assert table[key][name]["value"] == pytest.approx(value), (key, name)
                assert table[key][name]["basis"].startswith("measured: aiconfigurator-core")


def test_kernels_write_without_the_package_names_the_install(monkeypatch):
    monkeypatch.setattr(K.importlib.util, "find_spec", lambda name: None)
    res = CliRunner().invoke(main, ["calibrate", "--kernels", "--write"])
    assert res.exit_code == 2 and "pip install aiconfigurator-core" in res.output
    shown = CliRunner().invoke(main, ["calibrate", "--kernels", "--format", "json"])
    assert shown.exit_code == 0 and '"generation": "hopper"' in shown.output


def test_every_derived_share_is_a_share():
    for params in K.read_measured()["generations"].values():
        for name, value in params.items():
            if name.endswith(("_efficiency", "_factor")):
                assert 0.0 < value <= 1.0, name
            else:
                assert 0.0 < value < 1e-3 and math.isfinite(value), name


def test_an_unfitted_generation_takes_its_kernels_fixed_time_at_the_fitted_generations_engine_ratio():
    """A generation measured kernel by kernel but with no end-to-end curve (Blackwell Ultra) pays a kernel
    boundary at the ratio its fitted ancestor's end-to-end fit shows over that ancestor's measured kernel: the
    measured kernel alone would leave out the engine's launch and synchronisation (MODEL.md 5.5)."""
    table = {"fam": {"kernel_latency_s": {"value": 6e-6}},
             "fam/ultra": {"inherits": "fam"}, "fam/next": {"inherits": "fam/ultra"}}
    derived = {"generations": {K.FAMILY_GENERATION: {"kernel_latency_s": 4e-6}, "ultra": {"kernel_latency_s": 3e-6}}}
    fits = {"fam": {"params": ["kernel_latency_s"]}}
    assert K.engine_boundary(table, "fam/ultra", derived, fits) == (pytest.approx(1.5), "fam")
    assert K.engine_boundary(table, "fam/next", derived, fits) == (pytest.approx(1.5), "fam")
    assert K.engine_boundary(table, "fam", derived, fits) is None
