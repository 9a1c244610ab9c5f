"""SGLang: one ``python -m sglang.launch_server`` command per allocation row (written against SGLang 0.5.4, its
server arguments page)."""

from __future__ import annotations

from planner.export.common import PORT, Launch, ScriptTarget, drafter_argument, model_argument
from planner.export.rows import (Row, check_common, disaggregated, draft_tokens, hf_model_id,
                                 kv_cache_dtype, tokens_per_step)

ENGINE = "SGLang"
VERSION = "0.5.4"
RELEASE = "0.5.4"  # the plain release, for the files' first comment line
REFERENCE = "https://docs.sglang.ai/advanced_features/server_arguments.html"
PRECISIONS = ("bf16", "fp8", "fp4", "w4a16")
ONLINE = {"fp8": ["--quantization", "fp8"]}  # SGLang quantizes a 16-bit checkpoint to FP8 on load
# The planner's speculative methods as SGLang's --speculative-algorithm (NEXTN: the model's own MTP layers)
METHODS = {"none": None, "mtp": "NEXTN", "eagle": "EAGLE3", "draft_model": "STANDALONE"}
KV_DTYPES = {"fp8": "fp8_e4m3", "auto": "auto"}  # SGLang names the FP8 format
TRANSFER_BACKEND = "nixl"  # the plan names none; NIXL is the one all four targets document


def launch_args(row: Row) -> tuple[str, list[str], dict[str, str]]:
    """The model and server arguments of a row, and the values the operator must supply."""
    check_common(row, "sglang", ENGINE, PRECISIONS, METHODS)
    model, quantize, needs = model_argument(row, hf_model_id(row, ENGINE), ONLINE)
    args = ["--model-path", model, *parallel_args(row), "--max-running-requests", str(row["batch"]),
            "--chunked-prefill-size", str(tokens_per_step(row)),
            "--kv-cache-dtype", KV_DTYPES[kv_cache_dtype(row)], *quantize]
    spec, spec_needs = speculative_args(row)
    if disaggregated(row):
        args += ["--disaggregation-mode", row["role"], "--disaggregation-transfer-backend", TRANSFER_BACKEND]
        if row["role"] == "decode" and row["expert_parallel"] and int(row["tensor_parallel"]) > 1:
            # ServerArgs asserts it on a decode server of dp-size > 1: the prefill side's requests reach the decode
            # ranks round robin, each rank matched to its prefill peer (issue 42: the server aborted at start)
            args += ["--prefill-round-robin-balance"]
    return model, args + spec, {**needs, **spec_needs}


def parallel_args(row: Row) -> list[str]:
    """--tp-size is the replica's chips per stage; with expert parallel, attention runs data-parallel on each of
    them (--dp-size, --enable-dp-attention) and the experts spread over them (--ep-size)."""
    tp, pp = int(row["tensor_parallel"]), int(row["pipeline_parallel"])
    args = ["--tp-size", str(tp), "--pp-size", str(pp)]
    if row["expert_parallel"]:
        args += ["--dp-size", str(tp), "--enable-dp-attention", "--ep-size", str(tp)]
    return args


def speculative_args(row: Row) -> tuple[list[str], dict[str, str]]:
    """A chain of k draft tokens: k draft steps of one candidate each, k + 1 tokens verified."""
    method = row["speculative"] or "none"
    if method == "none":
        return [], {}
    k = draft_tokens(row)
    args = ["--speculative-algorithm", METHODS[method], "--speculative-num-steps", str(k),
            "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", str(k + 1)]
    if method in ("eagle", "draft_model"):
        path, needs = drafter_argument(row, method)
        return args + ["--speculative-draft-model-path", path], needs
    return args, {}


class SglangTarget(ScriptTarget):
    key, engine, version, release, reference = "sglang", ENGINE, VERSION, RELEASE, REFERENCE

    def launch(self, row: Row) -> Launch:
        _, args, needs = launch_args(row)
        return Launch(row, ["python", "-m", "sglang.launch_server", *args, "--port", PORT], None, needs)


TARGET = SglangTarget()
