"""Measured kernel tables reduced to the performance model's physical parameters (MODEL.md 5.5).

NVIDIA's ``aiconfigurator-core`` (PyPI, Apache-2.0) ships measured latencies of the kernels LLM engines run (GEMMs,
fused MoE layers, decode attention, all-reduces) for 14 GPUs, three engines and their versions, as Parquet tables.
They are data, not a dependency: ``planner calibrate --kernels`` reads an installed copy, fits each table to the
model's own form (a kernel's fixed time plus its roofline, MODEL.md 2.6-2.8) and writes the fitted parameters with
their provenance to ``data/measured_kernels.yaml``; ``calibrate --kernels --write`` also sets each NVIDIA
generation's kernel parameters in ``data/efficiency.yaml`` from them (``generation_parameters``). Nothing here runs
when planning.

Each fit minimises the summed squared log error of the table's rows (every row a measured latency) over the form's
few parameters, by Nelder-Mead in their logarithms (``calibration.nelder_mead``), within physical bounds.
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import importlib.util
import math
import statistics
from pathlib import Path

import numpy as np
import polars as pl
import yaml

from planner import catalog, yaml_io
from planner.writing import atomic_write
from planner.errors import InputError, PlannerError
from planner.perf.calibration import calibration_data, nelder_mead
from planner.perf.pack import efficiency_table

PACKAGE = "aiconfigurator_core"
DISTRIBUTION = "aiconfigurator-core"

# The package's systems this derivation reads: the catalog systems each one's figures stand for (their peaks and
# bandwidths are what the efficiencies are shares of) and their generation (Hardware.generation).
DEVICES = {
    "a100_sxm": ("hgx-a100", "ampere"),
    "h100_sxm": ("hgx-h100", "hopper"),
    "h200_sxm": ("hgx-h200", "hopper"),
    "b200_sxm": ("hgx-b200", "blackwell"),
    "gb200": ("gb200-nvl72", "blackwell"),
    "gb300": ("gb300-nvl72", "blackwell-ultra"),
}
ENGINES = ("trtllm", "sglang", "vllm")
VENDOR_BEST = "trtllm"  # vendor-best's kernels on NVIDIA GPUs (MODEL.md 5.3)
# The generation whose parameters are the family's own entry of data/efficiency.yaml: what a system of another
# family that inherits nvidia-gpu's (AMD, TPU, Trainium) or an NVIDIA system of no measured generation takes.
FAMILY_GENERATION = "blackwell"

# The tables' formats as the catalog's precisions and as bytes per weight and per activation element: the weights
# a kernel streams and the activations it reads (block scales counted: NVFP4 4.5 bits, FP8 block scales 1/128).
FORMATS = {
    "bfloat16": ("bf16", 2.0, 2.0),
    "fp8": ("fp8", 1.0, 1.0),
    "fp8_block": ("fp8", 1.0 + 4.0 / 128**2, 1.0),
    "nvfp4": ("fp4", 0.5625, 0.5625),
    "w4a16_mxfp4": ("w4a16", 0.53125, 2.0),
}
# How each table format is keyed in data/measured_kernels.yaml: by the catalog precision it serves, block-scaled
# FP8 apart from per-tensor FP8.
FORMAT_KEYS = {"bfloat16": "bf16", "fp8": "fp8", "fp8_block": "fp8_block", "nvfp4": "fp4", "w4a16_mxfp4": "w4a16"}
KV_FORMATS = {"bfloat16": ("bf16", 2.0), "fp8": ("fp8", 1.0)}

# Rows of a GEMM table that stand for an LLM layer's weight matmuls: both weight dimensions of layer size, up to
# 16,384 rows (tokens) a pass.
GEMM_SIZES = (1024, 32768)
GEMM_ROWS = 16384
MOE_GATED_SOURCES_EXCLUDED = ("moe_torch_flow_nongated",)  # Relu2 experts of two matrices, not three
ALLREDUCE_GPUS = 8

# Physical bounds of the fitted shares and fixed times.
BOUNDS = {"fixed_s": (1e-7, 2e-4), "bandwidth_efficiency": (0.05, 1.0), "compute_efficiency": (0.02, 1.0),
          "stream_s": (1e-10, 5e-6)}


# ---- reading ------------------------------------------------------------------------------------------------
def package_dir() -> Path:
    """Where the installed aiconfigurator-core keeps its systems; an InputError naming the install where it is
    missing."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise InputError(f"--kernels reads NVIDIA's measured kernel tables from the {DISTRIBUTION} package, which is "
                         f"not installed here: pip install {DISTRIBUTION} (Apache-2.0, about 114 MB)",
                         field="--kernels")
    return Path(next(iter(spec.submodule_search_locations))) / "systems"


def package_version() -> str:
    return importlib.metadata.version(DISTRIBUTION)


def system_figures(systems: Path, device: str) -> dict:
    return yaml_io.load_trusted(systems / f"{device}.yaml")["gpu"]


def versions_with(systems: Path, device: str, kind: str, engine: str, name: str) -> list[tuple[str, Path]]:
    """(engine version, path) of every version of an engine that has this table for this device, newest first."""
    root = systems / "data" / device / kind / engine
    if not root.is_dir():
        return []
    found = [(v.name, v / name) for v in root.iterdir() if (v / name).is_file()]
    return sorted(found, key=lambda f: _version_key(f[0]), reverse=True)


def _version_key(version: str) -> tuple:
    """'1.3.0rc20' -> (1, 3, 0, 20); '0.5.6.post2' -> (0, 5, 6, 0, 2); numbers compare as numbers."""
    parts = []
    for piece in version.replace("rc", ".-1.").replace("post", ".0.").split("."):
        parts.append(int(piece) if piece.lstrip("-").isdigit() else 0)
    return tuple(parts)


# ---- the model's forms, fitted ------------------------------------------------------------------------------
def fit_form(predict, measured_s: np.ndarray, names: tuple[str, ...], start: dict[str, float]) -> dict:
    """The parameters ``names`` of ``predict(params) -> seconds per row`` that minimise the summed squared log
    error against ``measured_s``, within ``BOUNDS``, by Nelder-Mead in their logarithms from ``start``; with the
    median and 90th-percentile error factor of the rows."""

    def params_of(z):
        return {n: float(min(max(math.exp(v), BOUNDS[n][0]), BOUNDS[n][1])) for n, v in zip(names, z)}

    def loss(z):
        return float(np.sum(np.log(predict(params_of(z)) / measured_s) ** 2))

    z = np.log([start[n] for n in names])
    for _ in range(3):  # restarts shake the simplex out of a collapsed corner
        z, _ = nelder_mead(loss, z, 600, step=0.3, spread=1e-12)
    fitted = params_of(z)
    errors = np.exp(np.abs(np.log(predict(fitted) / measured_s)))
    return {**{n: float(f"{fitted[n]:.4g}") for n in names}, "rows": int(len(measured_s)),
            "median_error": round(float(np.median(errors)), 3), "p90_error": round(float(np.percentile(errors, 90)), 3)}


def roofline(params: dict, memory_s: np.ndarray, compute_s: np.ndarray) -> np.ndarray:
    """A kernel's time in the model's form: its fixed time plus the slower of its reads and its arithmetic, each
    at its achieved share of the peak (MODEL.md 2.6, 2.8)."""
    return params["fixed_s"] + np.maximum(memory_s / params["bandwidth_efficiency"],
                                          compute_s / params["compute_efficiency"])


ROOFLINE = ("fixed_s", "bandwidth_efficiency", "compute_efficiency")
ROOFLINE_START = {"fixed_s": 5e-6, "bandwidth_efficiency": 0.7, "compute_efficiency": 0.5}


def fit_gemm(table: pl.DataFrame, peaks: dict) -> dict:
    """Per format: a weight matmul of m rows against an n x k weight, ``roofline``: the weight and activation bytes
    at the peak bandwidth, 2 m n k FLOPs at the format's peak."""
    out = {}
    for name, (precision, w_bytes, a_bytes) in FORMATS.items():
        if precision not in peaks:
            continue
        lo, hi = GEMM_SIZES
        rows = (table.filter((pl.col("gemm_dtype") == name) & pl.col("n").is_between(lo, hi)
                             & pl.col("k").is_between(lo, hi) & (pl.col("m") <= GEMM_ROWS))
                .group_by(["m", "n", "k"]).agg(pl.col("latency").min()))  # the engine runs its fastest kernel
        if rows.height < 20:
            continue
        m, n, k = (rows[c].to_numpy().astype(float) for c in ("m", "n", "k"))
        memory = (n * k * w_bytes + m * k * a_bytes + m * n * 2.0) / peaks["memory"]
        compute = 2.0 * m * n * k / peaks[precision]
        out[FORMAT_KEYS[name]] = fit_form(
            lambda p: roofline(p, memory, compute), rows["latency"].to_numpy() * 1e-3, ROOFLINE, ROOFLINE_START)
    return out


def fit_moe(table: pl.DataFrame, peaks: dict) -> dict:
    """Per format: one fused MoE layer on one rank (balanced routing), ``roofline``: the touched experts' weights
    read (min(E/ep, T k/ep) experts of 3 h I/tp weights) and their matmuls (2 x the T k / ep assignments x 3 h I/tp)
    at the format's peak: the fixed time is the layer's routing, permutation and launch."""
    out = {}
    for name, (precision, w_bytes, _) in FORMATS.items():
        if precision not in peaks:
            continue
        rows = (table.filter((pl.col("moe_dtype") == name) & (pl.col("distribution") == "balanced")
                             & ~pl.col("kernel_source").is_in(list(MOE_GATED_SOURCES_EXCLUDED)))
                .group_by(["num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size",
                           "moe_ep_size"]).agg(pl.col("latency").min()))
        if rows.height < 20:
            continue
        t, h, i, k, e, tp, ep = (rows[c].to_numpy().astype(float) for c in (
            "num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size"))
        expert = 3.0 * h * i / tp
        assignments = t * k / ep
        memory = np.minimum(e / ep, assignments) * expert * w_bytes / peaks["memory"]
        compute = 2.0 * assignments * expert / peaks[precision]
        fit = fit_form(lambda p: roofline(p, memory, compute), rows["latency"].to_numpy() * 1e-3, ROOFLINE,
                       {**ROOFLINE_START, "fixed_s": 3e-5, "compute_efficiency": 0.3})
        out[FORMAT_KEYS[name]] = fit
    return out


ATTENTION = ("fixed_s", "stream_s", "bandwidth_efficiency")


def fit_attention(table: pl.DataFrame, peaks: dict) -> dict:
    """Per KV format: one layer's decode attention over B streams of S cached tokens, full attention: a fixed
    time, a fixed time per stream, and the cache read (B S 2 nkv dh bytes) at its share of the peak bandwidth
    (decode attention is memory-bound: its arithmetic, B S 4 nh dh FLOPs, is bounded at the 16-bit peak)."""
    out = {}
    for name, (precision, kv_bytes) in KV_FORMATS.items():
        full = pl.col("window_size") == 0 if "window_size" in table.columns else pl.lit(True)  # no sliding window
        rows = (table.filter((pl.col("kv_cache_dtype") == name) & full)
                .group_by(["batch_size", "step", "num_heads", "num_key_value_heads", "head_dim"])
                .agg(pl.col("latency").min()))
        if rows.height < 20:
            continue
        b, s, nh, nkv, dh = (rows[c].to_numpy().astype(float) for c in (
            "batch_size", "step", "num_heads", "num_key_value_heads", "head_dim"))
        s = s + 1.0
        memory = b * s * 2.0 * nkv * dh * kv_bytes / peaks["memory"]
        compute = b * s * 4.0 * nh * dh / peaks["bf16"]

        def predict(p, b=b, memory=memory, compute=compute):
            return p["fixed_s"] + p["stream_s"] * b + np.maximum(memory / p["bandwidth_efficiency"], compute)

        out[precision] = fit_form(predict, rows["latency"].to_numpy() * 1e-3, ATTENTION,
                                  {"fixed_s": 8e-6, "stream_s": 1e-7, "bandwidth_efficiency": 0.8})
    return out


MLA = ("fixed_s", "stream_s", "bandwidth_efficiency", "compute_efficiency")
# DeepSeek's MLA as the tables measure it (the collectors' fixed shape): a 512-element latent and a 64-element RoPE
# key per token, attended absorbed (MODEL.md 2.6: 2 nh (2 r + d_rope) FLOPs a head a cached token).
MLA_LATENT, MLA_ROPE = 512, 64


def fit_mla(table: pl.DataFrame, peaks: dict) -> dict:
    """Per KV format: one layer's absorbed MLA decode over B streams of S cached tokens with nh heads on the GPU,
    the form of ``fit_attention`` with the arithmetic's share of the peak at the KV's precision fitted too: MLA's
    decode attention, 2 nh (2 r + d_rope) FLOPs per cached token a head, is compute-bound at long contexts."""
    out = {}
    for name, (precision, kv_bytes) in KV_FORMATS.items():
        if precision not in peaks:  # an FP8 cache on a chip with no FP8 arithmetic (A100)
            continue
        rows = (table.filter(pl.col("kv_cache_dtype") == name)
                .group_by(["batch_size", "step", "num_heads"]).agg(pl.col("latency").min()))
        if rows.height < 20:
            continue
        b, s, nh = (rows[c].to_numpy().astype(float) for c in ("batch_size", "step", "num_heads"))
        s = s + 1.0
        memory = b * s * (MLA_LATENT + MLA_ROPE) * kv_bytes / peaks["memory"]
        compute = b * s * 2.0 * nh * (2 * MLA_LATENT + MLA_ROPE) / peaks[precision]

        def predict(p, b=b, memory=memory, compute=compute):
            return p["fixed_s"] + p["stream_s"] * b + np.maximum(memory / p["bandwidth_efficiency"],
                                                               compute / p["compute_efficiency"])

        out[precision] = fit_form(predict, rows["latency"].to_numpy() * 1e-3, MLA,
                                  {"fixed_s": 1e-5, "stream_s": 1e-7, "bandwidth_efficiency": 0.6,
                                   "compute_efficiency": 0.5})
    return out


def fit_allreduce(table: pl.DataFrame, gpus: int = ALLREDUCE_GPUS) -> dict | None:
    """One all-reduce over ``gpus`` GPUs of 16-bit messages: latency + 2 (n-1)/n x bytes / bandwidth (MODEL.md 2.7),
    by least squares relative to each row (every message size weighs alike)."""
    rows = table.filter(pl.col("num_gpus") == gpus)
    if "allreduce_dtype" in rows.columns:
        rows = rows.filter(pl.col("allreduce_dtype") == "bfloat16")
    elif "nccl_dtype" in rows.columns:
        rows = rows.filter((pl.col("nccl_dtype") == "half") & (pl.col("op_name") == "all_reduce"))
    rows = rows.group_by("message_size").agg(pl.col("latency").min())
    if rows.height < 5:
        return None
    nbytes = rows["message_size"].to_numpy().astype(float) * 2.0
    t = rows["latency"].to_numpy() * 1e-3
    a = np.stack([np.ones_like(t), 2.0 * (gpus - 1) / gpus * nbytes], axis=1) / t[:, None]
    (latency, inverse_bw), *_ = np.linalg.lstsq(a, np.ones_like(t), rcond=None)
    latency, inverse_bw = max(latency, 1e-7), max(inverse_bw, 1e-13)
    errors = np.exp(np.abs(np.log((latency + 2.0 * (gpus - 1) / gpus * nbytes * inverse_bw) / t)))
    return {"gpus": gpus, "latency_s": float(f"{latency:.4g}"), "bandwidth_bytes_per_s": float(f"{1 / inverse_bw:.4g}"),
            "rows": int(len(t)), "median_error": round(float(np.median(errors)), 3),
            "p90_error": round(float(np.percentile(errors, 90)), 3)}


# ---- one device, every engine -------------------------------------------------------------------------------
def device_peaks(device: str, systems: Path) -> dict:
    """The peaks the shares are of: the catalog system's own figures (what the model multiplies them by), the
    package's where the catalog lists no such format."""
    hw = catalog.get_hardware(DEVICES[device][0])
    own = system_figures(systems, device)
    peaks = {"memory": hw.chip.memory[0].bandwidth_bytes_per_s.value}
    for precision, key in (("bf16", "bfloat16_tc_flops"), ("fp8", "fp8_tc_flops"), ("fp4", "fp4_tc_flops")):
        if precision in hw.chip.peak_flops_per_s:
            peaks[precision] = hw.chip.peak_flops_per_s[precision].value
        elif key in own:
            peaks[precision] = float(own[key])
    peaks["w4a16"] = peaks["bf16"]  # weight-only 4-bit multiplies in 16 bits
    return peaks


TABLES = {
    "gemm": ("gemm", "gemm_perf.parquet", fit_gemm),
    "moe": ("moe", "moe_perf.parquet", fit_moe),
    "attention": ("attention", "generation_attention_perf.parquet", fit_attention),
    "mla": ("mla", "generation_mla_perf.parquet", fit_mla),
}
ALLREDUCE_TABLES = (("custom_allreduce_perf.parquet", None), ("nccl_perf.parquet", "nccl"))


def derive_device(systems: Path, device: str) -> dict:
    peaks = device_peaks(device, systems)
    hw_id, generation = DEVICES[device]
    engines = {}
    for engine in ENGINES:
        fits = {}
        for key, (kind, name, fit) in TABLES.items():
            for version, path in versions_with(systems, device, kind, engine, name):  # the newest that measures it
                fitted = fit(pl.read_parquet(path), peaks)
                if fitted:
                    fits[key] = {"version": version, **fitted}
                    break
        for name, folder in ALLREDUCE_TABLES:
            for version, path in versions_with(systems, device, "comm", folder or engine, name):
                fitted = None if "allreduce" in fits else fit_allreduce(pl.read_parquet(path))
                if fitted:
                    fits["allreduce"] = {"version": f"{folder + ' ' if folder else ''}{version}", **fitted}
                    break
        if fits:
            engines[engine] = fits
    return {"catalog": hw_id, "generation": generation, "peaks": peaks, "engines": engines}


def derive(systems: Path | None = None) -> dict:
    """Every device's fits, with the package's version, licence and the date: ``data/measured_kernels.yaml``."""
    systems = systems or package_dir()
    devices = {d: derive_device(systems, d) for d in DEVICES if (systems / "data" / d).is_dir()}
    return {"source": {"package": DISTRIBUTION, "version": package_version(), "licence": "Apache-2.0",
                       "copyright": "NVIDIA CORPORATION & AFFILIATES",
                       "derived": _dt.date.today().isoformat(), "command": "planner calibrate --kernels --write"},
            "devices": devices, "generations": generation_parameters(devices)}


# ---- the model's parameters ---------------------------------------------------------------------------------
def generation_parameters(devices: dict, engine: str = VENDOR_BEST) -> dict:
    """Per generation, the kernel parameters of data/efficiency.yaml, each the median over the generation's
    devices of the vendor-best engine's fits (MODEL.md 5.5):

    - ``bandwidth_efficiency``, ``flops_efficiency``: the 16-bit GEMM's shares of peak bandwidth and peak FLOP/s;
    - ``fp8_flops_factor``, ``fp4_flops_factor``: the FP8 (the faster of per-tensor and block scales, the engine's
      choice) and NVFP4 GEMMs' share of their own peak, over the 16-bit one's;
    - ``grouped_gemm_factor``, ``fp8_grouped_gemm_factor``, ``fp4_grouped_gemm_factor``: the fused MoE layer's
      matmul share of the format's peak over the dense share the model gives that format (flops_efficiency times
      its factor); at FP8 the block-scaled layer where measured (the FP8 checkpoints of MoE models are block-scaled);
    - ``w4a16_flops_factor``: the weight-only 4-bit (MXFP4) MoE layer's matmul share over the 16-bit one's;
    - ``attention_flops_efficiency``, ``fp8_attention_flops_efficiency``: MLA decode attention's arithmetic share
      of the peak at its KV cache's precision (16-bit, FP8): attention kernels are not GEMMs (Hopper's run in
      16 bits whatever the cache's format, so their share of the FP8 peak is half their 16-bit one);
    - ``attention_stream_s``: decode attention's fixed time per stream (KV at FP8 where measured, else 16-bit);
    - ``kernel_latency_s``: the 16-bit GEMM's fixed time, one kernel boundary's;
    - ``collective_latency_s``: an 8-GPU all-reduce's small-message latency."""
    by_gen: dict[str, list[dict]] = {}
    for device in devices.values():
        fits = device["engines"].get(engine)
        if fits:
            by_gen.setdefault(device["generation"], []).append(fits)
    out = {}
    for generation, fits in sorted(by_gen.items()):
        values: dict[str, list[float]] = {}

        def add(name, value):
            if value is not None and math.isfinite(value):
                values.setdefault(name, []).append(value)

        for f in fits:
            gemm, moe, att, ar = f.get("gemm", {}), f.get("moe", {}), f.get("attention", {}), f.get("allreduce")
            bf16 = gemm.get("bf16")
            if bf16:
                add("bandwidth_efficiency", bf16["bandwidth_efficiency"])
                add("flops_efficiency", bf16["compute_efficiency"])
                add("kernel_latency_s", bf16["fixed_s"])
                fp8 = [gemm[k]["compute_efficiency"] for k in ("fp8", "fp8_block") if k in gemm]
                add("fp8_flops_factor", max(fp8) / bf16["compute_efficiency"] if fp8 else None)
                add("fp4_flops_factor", gemm["fp4"]["compute_efficiency"] / bf16["compute_efficiency"]
                    if "fp4" in gemm else None)
            if bf16 and moe:
                dense = {"bf16": bf16["compute_efficiency"]}
                fp8 = [gemm[k]["compute_efficiency"] for k in ("fp8", "fp8_block") if k in gemm]
                if fp8:
                    dense["fp8"] = max(fp8)
                if "fp4" in gemm:
                    dense["fp4"] = gemm["fp4"]["compute_efficiency"]
                for name, fmt, moe_keys in (("grouped_gemm_factor", "bf16", ("bf16",)),
                                            ("fp8_grouped_gemm_factor", "fp8", ("fp8_block", "fp8")),
                                            ("fp4_grouped_gemm_factor", "fp4", ("fp4",))):
                    layer = next((moe[k] for k in moe_keys if k in moe), None)
                    if layer is not None and fmt in dense:
                        add(name, layer["compute_efficiency"] / dense[fmt])
                if "w4a16" in moe and "bf16" in moe:
                    add("w4a16_flops_factor", moe["w4a16"]["compute_efficiency"] / moe["bf16"]["compute_efficiency"])
            kv = att.get("fp8") or att.get("bf16")
            if kv:
                add("attention_stream_s", kv["stream_s"])
            mla = f.get("mla", {})
            for name, fmt in (("attention_flops_efficiency", "bf16"), ("fp8_attention_flops_efficiency", "fp8")):
                if fmt in mla:
                    add(name, mla[fmt]["compute_efficiency"])
            if ar:
                add("collective_latency_s", ar["latency_s"])
        out[generation] = {n: float(f"{statistics.median(v):.4g}") for n, v in values.items()}
        out[generation] = {n: min(v, 1.0) if n.endswith(("_factor", "_efficiency")) else v
                           for n, v in out[generation].items()}
    return out


def book(derived: dict) -> dict:
    """``derived`` as an error book (``groups``: the parameters of each generation; ``points``: each table's fit,
    with its rows and median and 90th-percentile error) for ``planner calibrate --kernels``."""
    groups = [{"generation": g, **{name: params.get(name) for name in KERNEL_PARAMS}}
              for g, params in derived["generations"].items()]  # every column in each row: null where unmeasured
    points = []
    for device, d in derived["devices"].items():
        for engine, fits in d["engines"].items():
            for table, by_format in fits.items():
                if table == "allreduce":
                    points.append({"device": device, "engine": engine, "version": by_format["version"],
                                   "table": table, "format": f"{by_format['gpus']} GPUs",
                                   **{k: v for k, v in by_format.items() if k not in ("version", "gpus")}})
                    continue
                for fmt, fit in by_format.items():
                    if fmt != "version":
                        points.append({"device": device, "engine": engine, "version": by_format["version"],
                                       "table": table, "format": fmt, **fit})
    return {"groups": groups, "points": points}


def measured_kernels_path() -> Path:
    return catalog.DATA_DIR / "measured_kernels.yaml"


HEADER = """# NVIDIA's measured kernel tables (aiconfigurator-core, Apache-2.0, Copyright NVIDIA CORPORATION & AFFILIATES)
# reduced to the performance model's forms by planner calibrate --kernels (planner/perf/kernel_tables.py,
# docs/MODEL.md 5.5): per device and engine, the newest version's GEMM, fused MoE, decode attention and all-reduce
# tables fitted to a fixed time plus a roofline; per generation, the parameters data/efficiency.yaml takes.
# Derived data: the tables themselves are not redistributed here. NOTICE: this file contains values derived from
# aiconfigurator-core (https://github.com/ai-dynamo/aiconfigurator), licensed under the Apache License 2.0.
"""


def write_measured(derived: dict, path: Path | None = None) -> Path:
    path = path or measured_kernels_path()
    atomic_write(path, (HEADER + yaml.safe_dump(derived, sort_keys=False, width=120)).encode())
    return path


def read_measured() -> dict:
    return catalog._read_yaml(measured_kernels_path())


KERNEL_PARAMS = ("bandwidth_efficiency", "flops_efficiency", "fp8_flops_factor", "fp4_flops_factor",
                 "w4a16_flops_factor", "grouped_gemm_factor", "fp8_grouped_gemm_factor", "fp4_grouped_gemm_factor",
                 "attention_flops_efficiency", "fp8_attention_flops_efficiency", "attention_stream_s",
                 "kernel_latency_s", "collective_latency_s")


def _generation_of(key: str) -> str:
    return key.split("/", 1)[1] if "/" in key else FAMILY_GENERATION


def engine_boundary(table: dict, key: str, derived: dict, fits: dict) -> tuple[float, str] | None:
    """(fitted / measured kernel fixed time, entry) of the nearest entry ``key`` inherits from whose
    ``kernel_latency_s`` the end-to-end calibration fits: a kernel boundary inside an engine costs the kernel's
    own fixed time plus the launch, synchronisation and gaps the engine adds, which the kernel tables do not
    time. A generation measured kernel by kernel but with no end-to-end curve of its own takes its kernel's
    fixed time at that ratio (MODEL.md 5.5); None where no ancestor is fitted so."""
    parent = table.get(key, {}).get("inherits")
    seen = {key}
    while parent and parent not in seen:
        seen.add(parent)
        own = derived["generations"].get(_generation_of(parent), {}).get("kernel_latency_s")
        if "kernel_latency_s" in fits.get(parent, {}).get("params", ()) and own:
            return table[parent]["kernel_latency_s"]["value"] / own, parent
        parent = table.get(parent, {}).get("inherits")
    return None


def write_generation_efficiencies(derived: dict) -> list[str]:
    """Each NVIDIA generation's kernel parameters in data/efficiency.yaml set from ``derived``: the entry
    ``nvidia-gpu/GENERATION`` of each generation that has a device, the family's own for ``FAMILY_GENERATION``;
    the rest keep what they inherit. A parameter the end-to-end calibration fits for that entry (a kernel
    boundary's cost inside an engine) keeps its fitted value: the measured one is its lower bound there
    (data/calibration.yaml). Returns the entries written."""
    path = catalog.DATA_DIR / "efficiency.yaml"
    table = yaml_io.load_trusted(path)
    written = []
    source = derived["source"]
    fits = calibration_data()["fit"]
    for generation, params in derived["generations"].items():
        key = "nvidia-gpu" if generation == FAMILY_GENERATION else f"nvidia-gpu/{generation}"
        if key not in table:
            raise PlannerError(f"data/efficiency.yaml has no entry {key!r} for the measured generation {generation}")
        devices = sorted(d for d, v in derived["devices"].items() if v["generation"] == generation)
        fitted = set(fits.get(key, {}).get("params", ()))  # fitted end to end, the measured value their bound
        measured = (f"{source['package']} {source['version']} kernel tables of {', '.join(devices)} ({VENDOR_BEST}), "
                    f"data/measured_kernels.yaml (derived {source['derived']})")
        for name in KERNEL_PARAMS:
            if name in params and name not in fitted:
                table[key][name] = {"value": params[name], "basis": f"measured: {measured}"}
        boundary = engine_boundary(table, key, derived, fits)
        if "kernel_latency_s" in params and "kernel_latency_s" not in fitted and boundary is not None:
            ratio, parent = boundary
            table[key]["kernel_latency_s"] = {
                "value": float(f"{params['kernel_latency_s'] * ratio:.4g}"),
                "basis": f"measured GEMM fixed time {params['kernel_latency_s'] * 1e6:.3g} us ({measured}) times "
                         f"{ratio:.3g}, what a kernel boundary costs inside the engine over the kernel alone where "
                         f"{parent} is fitted end to end (MODEL.md 5.5)"}
        written.append(key)
    header = "".join(line + "\n" for line in path.read_text().splitlines() if line.startswith("#"))
    atomic_write(path, (header + yaml.safe_dump(table, sort_keys=False, width=120)).encode())
    efficiency_table.cache_clear()
    return written
