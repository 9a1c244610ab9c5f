"""vLLM: one ``vllm serve`` command per allocation row (written against vLLM 0.34.0, whose own ``vllm serve``
parser and checks judge every exported command: tests/test_engines_accept.py), and for a workload served by
prefill and decode rows, the vLLM router that pairs them."""

from __future__ import annotations

import dataclasses
import json
import math

from planner.export.common import (HEADLESS, PORT, PORT_LINE, Launch, Router, ScriptTarget, disaggregated_pairs,
                                   drafter_argument, header_lines, model_argument, rank_lines, rank_needs,
                                   router_script, row_comment, shell_script)
from planner.export.rows import (PlanRows, Row, check_common, disaggregated, draft_tokens, hf_model_id,
                                 kv_cache_dtype, tokens_per_step)

ENGINE = "vLLM"
VERSION = "0.34.0"
RELEASE = "0.34.0"  # the plain release, for the files' first comment line
REFERENCE = "https://docs.vllm.ai/en/v0.34.0/configuration/engine_args.html"
PRECISIONS = ("bf16", "fp8", "fp4", "w4a16")
ONLINE = {"fp8": ["--quantization", "fp8"]}  # vLLM quantizes a 16-bit checkpoint to FP8 on load
# The planner's speculative methods as vLLM's --speculative-config "method" (config/speculative.py's
# SpeculativeMethod at 0.34: "mtp" is every model's own MTP layers, the per-model names such as "deepseek_mtp"
# deprecated into it; "draft_model" a separate drafter, which 0.11's V1 engine refused and 0.34 runs)
METHODS = {"none": None, "mtp": "mtp", "eagle": "eagle3", "draft_model": "draft_model"}
# NIXL carries the KV cache from prefill to decode instances (docs/features/nixl_connector_usage); the plan
# names no transfer backend, and NIXL is the one all four targets document
KV_CONNECTOR = "NixlConnector"
KV_TRANSFER = {"kv_connector": KV_CONNECTOR, "kv_role": "kv_both"}
# vLLM's router (the vllm-router package; its own parser judges the command, tests/test_engines_accept.py): a
# request goes to a prefill replica, then with its KV cache over NIXL to a decode replica
ROUTER = "vllm-router"
ROUTER_VERSION = "0.1.17"
DP_RPC_PORT = 13345  # the rank-0 host's data-parallel RPC port, where a replica's ranks over several hosts meet


def engine_args(row: Row, target: str = ENGINE) -> tuple[str, list[str], dict[str, str]]:
    """The model and vLLM engine arguments of a row (the same under vllm serve, Dynamo's and llm-d's workers),
    and the values the operator must supply; refuses what vLLM cannot express."""
    check_common(row, "vllm", target, PRECISIONS, METHODS)
    model, quantize, needs = model_argument(row, hf_model_id(row, target), ONLINE)
    per_rank = rank_row(row)
    args = parallel_args(row) + ["--max-num-seqs", str(per_rank["batch"]),
                                 "--max-num-batched-tokens", str(tokens_per_step(per_rank)),
                                 "--kv-cache-dtype", kv_cache_dtype(row)] + quantize
    spec, spec_needs = speculative_config(row)
    if spec is not None:
        args += ["--speculative-config", json.dumps(spec)]
    return model, args, {**needs, **spec_needs}


def rank_row(row: Row) -> Row:
    """The row as one data-parallel rank sees it: vLLM applies --max-num-seqs and --max-num-batched-tokens to each
    rank, so an expert-parallel replica of batch B over N ranks sets ceil(B / N) on each (issue 42: B on each let
    a replica admit N x B streams); the row itself where attention is not data-parallel."""
    ranks = int(row["tensor_parallel"]) if row["expert_parallel"] else 1
    if ranks <= 1:
        return row
    return dataclasses.replace(row, fields={**row.fields, "batch": math.ceil(int(row["batch"]) / ranks)})


def parallel_args(row: Row) -> list[str]:
    """Tensor and pipeline parallel; with expert parallel, attention data-parallel over the replica's chips and
    the experts spread over them (vLLM's --data-parallel-size with --enable-expert-parallel)."""
    tp, pp = int(row["tensor_parallel"]), int(row["pipeline_parallel"])
    if row["expert_parallel"]:
        return ["--tensor-parallel-size", "1", "--pipeline-parallel-size", str(pp), "--data-parallel-size", str(tp),
                "--enable-expert-parallel"]
    return ["--tensor-parallel-size", str(tp), "--pipeline-parallel-size", str(pp)]


def multinode_args(row: Row, rank: str = "$NODE_RANK", start: str = "$START_RANK", leader: str = "$MASTER_ADDR",
                   rpc_port: str = "$DP_RPC_PORT") -> list[str]:
    """A replica over several hosts (more chips than one holds): one ``vllm serve`` a host. Expert parallel: its
    data-parallel ranks spread over the hosts (each host's ranks local, the first at ``start``, the rank-0 host
    ``leader`` and its ``rpc_port``); else tensor and pipeline parallel over the hosts (vLLM's own multiprocessing
    over nodes: --nnodes, --node-rank ``rank``, --master-addr ``leader``). The words stand for this host's values
    as the caller's launch supplies them (a script's variables, a LeaderWorkerSet pod's)."""
    if row.nodes == 1:
        return []
    if row["expert_parallel"]:
        return ["--data-parallel-size-local", str(row.chips_per_node), "--data-parallel-start-rank", start,
                "--data-parallel-address", leader, "--data-parallel-rpc-port", rpc_port]
    return ["--nnodes", str(row.nodes), "--node-rank", rank, "--master-addr", leader]


def speculative_config(row: Row) -> tuple[dict | None, dict[str, str]]:
    method = row["speculative"] or "none"
    if method == "none":
        return None, {}
    config: dict = {"method": METHODS[method], "num_speculative_tokens": draft_tokens(row)}
    needs: dict[str, str] = {}
    if method in ("eagle", "draft_model"):
        config["model"], needs = drafter_argument(row, method)
    return config, needs


class VllmTarget(ScriptTarget):
    key, engine, version, release, reference = "vllm", ENGINE, VERSION, RELEASE, REFERENCE

    def launch(self, row: Row) -> Launch:
        model, args, needs = engine_args(row)
        if disaggregated(row):
            args += ["--kv-transfer-config", json.dumps(KV_TRANSFER)]
        multi = multinode_args(row)
        if multi:  # the ranks above 0 run headless; each host's rank and the rank-0 host's address the operator's
            multi.append(HEADLESS)
            needs = {**needs, **rank_needs(row, "MASTER_ADDR", "the address of the replica's rank-0 host")}
        return Launch(row, ["vllm", "serve", model, *args, *multi, "--port", PORT], None, needs)

    def script(self, plan: PlanRows, launch: Launch) -> str:
        row = launch.row
        preamble = [PORT_LINE] + (rank_lines(row, headless=True) if row.nodes > 1 else [])
        if row.nodes > 1 and row["expert_parallel"]:
            preamble += [f"START_RANK=$((NODE_RANK * {row.chips_per_node}))  # this host's first data-parallel rank",
                         f'DP_RPC_PORT="${{DP_RPC_PORT:-{DP_RPC_PORT}}}"  # the rank-0 host\'s data-parallel RPC port']
        return shell_script(launch, header_lines(self, plan) + row_comment(row), preamble,
                            ("PORT", "START_RANK", "DP_RPC_PORT"))

    def routers(self, launches: list[Launch]) -> list[Router]:
        return disaggregated_pairs(launches)

    def router(self, plan: PlanRows, router: Router) -> str:
        return router_script(self, plan, router, [ROUTER, "--vllm-pd-disaggregation", "--kv-connector", "nixl"],
                             {"PREFILL_URLS": ["--prefill"], "DECODE_URLS": ["--decode"]},
                             ["--host", "0.0.0.0", "--port", PORT], f"{ROUTER} {ROUTER_VERSION}")


TARGET = VllmTarget()
