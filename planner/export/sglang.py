"""SGLang: one ``python -m sglang.launch_server`` command per allocation row (written against SGLang 0.5.23, whose
own ``ServerArgs`` parser judges every exported command: tests/test_engines_accept.py), and for a workload served
by prefill and decode rows, SGLang's router that pairs them (sglang-router)."""

from __future__ import annotations

from planner.export.common import (PORT, PORT_LINE, Launch, Router, ScriptTarget, disaggregated_pairs, drafter_argument,
                                   header_lines, model_argument, rank_lines, rank_needs, router_script, row_comment,
                                   shell_script)
from planner.export.rows import (PlanRows, Row, check_common, disaggregated, draft_tokens, hf_model_id,
                                 kv_cache_dtype, tokens_per_step)

ENGINE = "SGLang"
VERSION = "0.5.23"
RELEASE = "0.5.23"  # the plain release, for the files' first comment line
REFERENCE = "https://docs.sglang.ai/advanced_features/server_arguments.html"
PRECISIONS = ("bf16", "fp8", "fp4", "w4a16")
ONLINE = {"fp8": ["--quantization", "fp8"]}  # SGLang quantizes a 16-bit checkpoint to FP8 on load
# The planner's speculative methods as SGLang's --speculative-algorithm (NEXTN: the model's own MTP layers)
METHODS = {"none": None, "mtp": "NEXTN", "eagle": "EAGLE3", "draft_model": "STANDALONE"}
KV_DTYPES = {"fp8": "fp8_e4m3", "auto": "auto"}  # SGLang names the FP8 format
TRANSFER_BACKEND = "nixl"  # the plan names none; NIXL is the one all four targets document
# A prefill server's bootstrap port, where its decode peers fetch the KV cache from (SGLang's default, 8998): a
# script variable, so that copies on one host each take their own, and the router is told each
BOOTSTRAP_PORT = "$BOOTSTRAP_PORT"
DEFAULT_BOOTSTRAP_PORT = 8998
BOOTSTRAP_LINE = (f'BOOTSTRAP_PORT="${{BOOTSTRAP_PORT:-{DEFAULT_BOOTSTRAP_PORT}}}"  # a prefill copy\'s KV bootstrap '
                  'port: one a copy on a host, and the router told it (router script: PREFILL_URLS entries '
                  'URL,BOOTSTRAP_PORT)')
ROUTER = "sglang-router"
ROUTER_VERSION = "0.3.2"


def launch_args(row: Row) -> tuple[str, list[str], dict[str, str]]:
    """The model and server arguments of a row, and the values the operator must supply."""
    check_common(row, "sglang", ENGINE, PRECISIONS, METHODS)
    model, quantize, needs = model_argument(row, hf_model_id(row, ENGINE), ONLINE)
    args = ["--model-path", model, *parallel_args(row), "--max-running-requests", str(row["batch"]),
            "--chunked-prefill-size", str(tokens_per_step(row)),
            "--kv-cache-dtype", KV_DTYPES[kv_cache_dtype(row)], *quantize]
    spec, spec_needs = speculative_args(row)
    if disaggregated(row):
        # 0.5.4's decode server of dp-size > 1 asserted --prefill-round-robin-balance; 0.5.23 removed the flag (its
        # prefill server tells its decode peers which rank holds a request through the bootstrap server)
        args += ["--disaggregation-mode", row["role"], "--disaggregation-transfer-backend", TRANSFER_BACKEND]
        if row["role"] == "prefill":
            args += ["--disaggregation-bootstrap-port", BOOTSTRAP_PORT]
    # SGLang listens on 127.0.0.1 unless told: a replica behind a router or a load balancer must take connections
    return model, args + spec + ["--host", "0.0.0.0"], {**needs, **spec_needs}


def parallel_args(row: Row) -> list[str]:
    """--tp-size is the replica's chips per stage; with expert parallel, attention runs data-parallel on each of
    them (--attn-dp-size: 0.5.23 deprecated --dp-size with --enable-dp-attention for it, and a bare --dp-size now
    counts whole replicas) and the experts spread over them (--ep-size)."""
    tp, pp = int(row["tensor_parallel"]), int(row["pipeline_parallel"])
    args = ["--tp-size", str(tp), "--pp-size", str(pp)]
    if row["expert_parallel"]:
        args += ["--attn-dp-size", str(tp), "--ep-size", str(tp)]
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
        if row.nodes > 1:  # one server process a host, the ranks joined at the rank-0 host's address
            args += ["--nnodes", str(row.nodes), "--node-rank", "$NODE_RANK", "--dist-init-addr", "$DIST_INIT_ADDR"]
            needs = {**needs, **rank_needs(row, "DIST_INIT_ADDR", "the rank-0 host's address and a free port, "
                                                                   "HOST:PORT, where the replica's ranks meet")}
        return Launch(row, ["python", "-m", "sglang.launch_server", *args, "--port", PORT], None, needs)

    def script(self, plan: PlanRows, launch: Launch) -> str:
        preamble = [PORT_LINE] + ([BOOTSTRAP_LINE] if launch.row["role"] == "prefill" else [])
        preamble += rank_lines(launch.row) if launch.row.nodes > 1 else []
        return shell_script(launch, header_lines(self, plan) + row_comment(launch.row), preamble,
                            ("PORT", "BOOTSTRAP_PORT"))

    def routers(self, launches: list[Launch]) -> list[Router]:
        return disaggregated_pairs(launches)

    def router(self, plan: PlanRows, router: Router) -> str:
        # a prefill entry URL,BOOTSTRAP_PORT becomes --prefill URL BOOTSTRAP_PORT (bash's own string operations on
        # the operator's value: nothing evaluated); a bare URL, the prefill's default port 8998
        prefill = ('--prefill "${u%%,*}" "$([[ "$u" == *,* ]] && printf %s "${u#*,}" || printf '
                   f'{DEFAULT_BOOTSTRAP_PORT})"')
        return router_script(self, plan, router, ["python", "-m", "sglang_router.launch_router",
                                                  "--pd-disaggregation"],
                             {"PREFILL_URLS": prefill, "DECODE_URLS": ["--decode"]},
                             ["--host", "0.0.0.0", "--port", PORT], f"{ROUTER} {ROUTER_VERSION}")


TARGET = SglangTarget()
