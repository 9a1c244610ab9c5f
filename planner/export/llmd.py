"""llm-d: Helm values for the llm-d-modelservice chart, one release per allocation row (written against the chart's
v0.4.12 values schema, which tests/data/schemas vendors and the tests validate every file against): the row's role
as the chart's decode or prefill pool with its replicas, parallelism, GPUs and vLLM arguments, its model artifacts
with their size. Since chart v0.3.0 the InferencePool, its route and its endpoint picker come from their own chart
(the Gateway API Inference Extension's), which selects a workload's pods by the labels every release of it carries."""

from __future__ import annotations

import json
import math

from planner.catalog import WEIGHT_BYTES
from planner.export.common import Launch, header_lines, row_comment
from planner.export.k8s import ManifestTarget, dns_name, env_of, k8s_args, needs_comments, yaml_file
from planner.export.rows import PlanRows, Row, disaggregated, hf_id_of, multinode_skip, whole_replicas
from planner.export.vllm import KV_TRANSFER, engine_args

ENGINE = "llm-d"
VERSION = "llm-d-modelservice chart v0.4.12 (image vllm/vllm-openai v0.34.0)"
RELEASE = "0.4.12"  # the plain release, for the files' first comment line
REFERENCE = ("https://github.com/llm-d-incubation/llm-d-modelservice/blob/llm-d-modelservice-v0.4.12/charts/"
             "llm-d-modelservice/values.schema.json")
CHECKPOINT_PVC = "planner-checkpoints"  # the PVC a checkpoint the plan does not hold is read from (README.md)
GIB = 1024 ** 3
# vLLM's own image of the release whose parser judges the arguments (tests/test_engines_accept.py); the chart runs
# any vLLM image (llm-d-cuda v0.3.1 carried vLLM 0.11, which refuses the draft_model and generic mtp methods)
IMAGE = "vllm/vllm-openai:v0.34.0"


class LlmdTarget(ManifestTarget):
    key, engine, version, release, reference = "llm-d", ENGINE, VERSION, RELEASE, REFERENCE
    image_words = "llm-d's CUDA image"

    def skip_reason(self, row: Row) -> str | None:
        # the chart's LeaderWorkerSet gives each worker pod the same arguments: a data-parallel rank's start on each
        # host (its index x local ranks) or a tensor-parallel node rank would need a command of the export's own
        return super().skip_reason(row) or multinode_skip(
            row, "llm-d's chart runs one as a LeaderWorkerSet whose pods each need their own rank arguments (a "
                 "custom modelCommand)")

    def launch(self, row: Row) -> Launch:
        model, args, needs = engine_args(row, ENGINE)
        args = without_parallel_flags(args)  # the chart writes them from parallelism (vllmServe)
        if disaggregated(row):
            args += ["--kv-transfer-config", json.dumps(KV_TRANSFER)]
        if "CHECKPOINT" in needs:  # the chart loads it from its PVC (model_artifacts), not from a variable
            needs = {**needs, "CHECKPOINT": f"{needs['CHECKPOINT']}, at {CHECKPOINT_PVC}/{hf_id_of(row.model)}-"
                                            f"{row['precision']} on the PVC {CHECKPOINT_PVC}"}
        return Launch(row, ["vllm", "serve", model, *args], None, needs)

    def file_for(self, row: Row) -> str:
        return f"{row.slug}.values.yaml"

    def files(self, plan: PlanRows, launches: list[Launch]) -> dict[str, str]:
        out = {}
        for ln in launches:
            comments = header_lines(self, plan) + row_comment(ln.row) + needs_comments([ln])
            out[self.file_for(ln.row)] = yaml_file(comments, [self.values(plan, ln)])
        return out

    def values(self, plan: PlanRows, launch: Launch) -> dict:
        row = launch.row
        pool = "prefill" if row["role"] == "prefill" else "decode"
        other = "decode" if pool == "prefill" else "prefill"
        model = launch.argv[2]
        tp, ep = int(row["tensor_parallel"]), bool(row["expert_parallel"])
        container = {"name": "vllm", "image": IMAGE, "modelCommand": "vllmServe", "args": k8s_args(launch.argv[3:]),
                     "mountModelVolume": True,  # the model-storage volume the chart makes from modelArtifacts
                     "resources": {"limits": {"nvidia.com/gpu": str(row["chips_per_replica"])},
                                   "requests": {"nvidia.com/gpu": str(row["chips_per_replica"])}}}
        env = [e for e in env_of(launch) if any(f"$({e['name']})" in a for a in container["args"])]
        if env:  # the values the container's arguments read (the checkpoint is the chart's model artifact)
            container["env"] = env
        return {"modelArtifacts": model_artifacts(row, model, dns_name(plan.scenario, row["workload"])),
                "routing": {"servicePort": 8000},
                pool: {"create": True, "replicas": whole_replicas(row),
                       # with expert parallel, every chip of the replica is a data-parallel attention rank
                       "parallelism": {"tensor": 1 if ep else tp, "data": tp if ep else 1,
                                       "dataLocal": tp if ep else 1},
                       "containers": [container]},
                other: {"create": False}}


PARALLEL_FLAGS = {"--tensor-parallel-size": 1, "--data-parallel-size": 1, "--pipeline-parallel-size": 1}


def without_parallel_flags(args: list[str]) -> list[str]:
    """vLLM's arguments less the tensor and data parallel sizes, which the chart's vllmServe command writes from
    ``parallelism`` (given twice, the last would win: issue 42's values repeated them). Pipeline stages are kept
    where above 1 (the chart has no field for them)."""
    out, k = [], 0
    while k < len(args):
        if args[k] in PARALLEL_FLAGS and k + 1 < len(args):
            if args[k] == "--pipeline-parallel-size" and args[k + 1] != "1":
                out += args[k:k + 2]
            k += 2
            continue
        out.append(args[k])
        k += 1
    return out


def model_artifacts(row: Row, model: str, pool_label: str) -> dict:
    """The chart's modelArtifacts: the Hugging Face checkpoint (``hf://``), or where the row needs one the plan
    does not hold (a quantized copy), the path it is read from on the PVC CHECKPOINT_PVC (``pvc://``), never a
    placeholder Helm leaves unexpanded; the download's size from the model's weights at the checkpoint's precision
    (the chart's default, 5Mi, holds none); the labels the workload's InferencePool selects."""
    published = not model.startswith("$")
    hf_id = model if published else hf_id_of(row.model)
    precision = row.model.native_precision if published else row["precision"]
    size_gib = math.ceil(row.model.total_params * WEIGHT_BYTES.get(precision, 2.0) * 1.1 / GIB) + 1
    return {"name": hf_id,
            "uri": f"hf://{hf_id}" if published else f"pvc://{CHECKPOINT_PVC}/{hf_id}-{row['precision']}",
            "size": f"{size_gib}Gi",
            "labels": {"llm-d.ai/inference-serving": "true", "llm-d.ai/model": pool_label}}


TARGET = LlmdTarget()
