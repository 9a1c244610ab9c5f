"""llm-d: Helm values for the llm-d-modelservice chart, one release per allocation row (written against llm-d
0.3.1 and the chart's values schema): the row's role as the chart's decode or prefill pool with its replicas,
parallelism, GPUs and vLLM arguments. A workload's releases share one InferencePool (its labels), which the
first creates."""

from __future__ import annotations

import json

from planner.export.common import Launch, header_lines, row_comment
from planner.export.k8s import ManifestTarget, dns_name, env_of, k8s_args, needs_comments, yaml_file
from planner.export.rows import PlanRows, Row, disaggregated, whole_replicas
from planner.export.vllm import KV_TRANSFER, engine_args

ENGINE = "llm-d"
VERSION = "0.3.1 (llm-d-modelservice chart, vLLM 0.11.0)"
REFERENCE = "https://github.com/llm-d-incubation/llm-d-modelservice/blob/main/charts/llm-d-modelservice/values.yaml"
IMAGE = "ghcr.io/llm-d/llm-d-cuda:v0.3.1"


class LlmdTarget(ManifestTarget):
    key, engine, version, reference = "llm-d", ENGINE, VERSION, REFERENCE
    image_words = "llm-d's CUDA image"

    def launch(self, row: Row) -> Launch:
        model, args, needs = engine_args(row, ENGINE)
        if disaggregated(row):
            args += ["--kv-transfer-config", json.dumps(KV_TRANSFER)]
        return Launch(row, ["vllm", "serve", model, *args], None, needs)

    def file_for(self, row: Row) -> str:
        return f"{row.slug}.values.yaml"

    def files(self, plan: PlanRows, launches: list[Launch]) -> dict[str, str]:
        first: set[str] = set()
        out = {}
        for ln in launches:
            creates_pool = ln.row["workload"] not in first
            first.add(ln.row["workload"])
            comments = header_lines(self, plan) + row_comment(ln.row) + needs_comments([ln])
            out[self.file_for(ln.row)] = yaml_file(comments, [self.values(plan, ln, creates_pool)])
        return out

    def values(self, plan: PlanRows, launch: Launch, creates_pool: bool) -> dict:
        row = launch.row
        pool = "prefill" if row["role"] == "prefill" else "decode"
        other = "decode" if pool == "prefill" else "prefill"
        model = launch.argv[2]
        tp, ep = int(row["tensor_parallel"]), bool(row["expert_parallel"])
        container = {"name": "vllm", "image": IMAGE, "modelCommand": "vllmServe", "args": k8s_args(launch.argv[3:]),
                     "resources": {"limits": {"nvidia.com/gpu": str(row["chips_per_replica"])},
                                   "requests": {"nvidia.com/gpu": str(row["chips_per_replica"])}}}
        if launch.needs:
            container["env"] = env_of(launch)
        return {"modelArtifacts": {"name": model if not model.startswith("$") else row.demand.get("model"),
                                   "uri": f"hf://{model}" if not model.startswith("$") else "pvc://$(CHECKPOINT)",
                                   "labels": {"llm-d.ai/inferenceServing": "true",
                                              "llm-d.ai/model": dns_name(plan.scenario, row["workload"])}},
                "routing": {"servicePort": 8000, "inferencePool": {"create": creates_pool},
                            "httpRoute": {"create": creates_pool}, "epp": {"create": creates_pool}},
                pool: {"create": True, "replicas": whole_replicas(row),
                       # with expert parallel, every chip of the replica is a data-parallel attention rank
                       "parallelism": {"tensor": 1 if ep else tp, "data": tp if ep else 1,
                                       "dataLocal": tp if ep else 1},
                       "containers": [container]},
                other: {"create": False}}


TARGET = LlmdTarget()
