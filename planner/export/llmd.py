"""llm-d: Helm values for the llm-d-modelservice chart, one release per allocation row (written against the chart's
v0.4.12 values schema, which tests/data/schemas vendors and the tests validate every file against): the row's role
as the chart's decode or prefill pool with its replicas, parallelism, GPUs and vLLM arguments, its model artifacts
with their size. Since chart v0.3.0 the InferencePool, its route and its endpoint picker come from their own chart
(the Gateway API Inference Extension's), which selects a workload's pods by the labels every release of it carries."""

from __future__ import annotations

import json
import math

from planner.catalog import WEIGHT_BYTES
from planner.export.common import Launch, header_lines, row_comment, shell_word
from planner.export.k8s import ManifestTarget, dns_name, env_of, k8s_args, needs_comments, yaml_file
from planner.export.rows import PlanRows, Row, disaggregated, hf_id_of, whole_replicas
from planner.export.vllm import DP_RPC_PORT, KV_TRANSFER, engine_args, multinode_args

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
        artifacts = model_artifacts(row, model, dns_name(plan.scenario, row["workload"]))
        gpus = str(row.chips_per_node)
        container = {"name": "vllm", "image": IMAGE, "modelCommand": "vllmServe", "args": k8s_args(launch.argv[3:]),
                     "mountModelVolume": True,  # the model-storage volume the chart makes from modelArtifacts
                     "resources": {"limits": {"nvidia.com/gpu": gpus}, "requests": {"nvidia.com/gpu": gpus}}}
        env = [e for e in env_of(launch) if any(f"$({e['name']})" in a for a in container["args"])]
        if row.nodes > 1:  # a LeaderWorkerSet of row.nodes pods, each running its host's share (lws_command)
            container.update(modelCommand="custom", command=["/bin/sh", "-c"],
                             args=[lws_command(row, launch, artifacts, pool)])
            env = [e for e in env_of(launch) if e["name"] in launch.needs and e["name"] != "CHECKPOINT"]
        if env:  # the values the container's arguments read (the checkpoint is the chart's model artifact)
            container["env"] = env
        values = {"modelArtifacts": artifacts, "routing": {"servicePort": SERVICE_PORT,
                                                             "proxy": {"targetPort": PROXY_TARGET_PORT}}}
        if row.nodes > 1:
            values["multinode"] = True
        return {**values,
                pool: {"create": True, "replicas": whole_replicas(row), "parallelism": parallelism(row),
                       "containers": [container]},
                other: {"create": False}}


SERVICE_PORT = 8000  # the pods' service port: a prefill pod's vLLM listens on it
PROXY_TARGET_PORT = 8200  # a decode pod's vLLM, behind the chart's routing sidecar on the service port
MOUNT_PATH = "/model-cache"  # where the chart mounts the model volume (modelArtifacts.mountPath)


def parallelism(row: Row) -> dict:
    """The chart's parallelism: with expert parallel every chip of the replica is a data-parallel attention rank
    (``dataLocal`` of them on each host); else tensor parallel; ``workers`` the hosts a replica spans."""
    tp = int(row["tensor_parallel"])
    if row["expert_parallel"]:
        out = {"tensor": 1, "data": tp, "dataLocal": row.chips_per_node}
    else:
        out = {"tensor": tp, "data": 1, "dataLocal": 1}
    return {**out, "workers": row.nodes} if row.nodes > 1 else out


def lws_command(row: Row, launch: Launch, artifacts: dict, pool: str) -> str:
    """The shell command each pod of a multi-host replica runs (the chart's vllmServe hands every pod the same
    arguments, and each host needs its own rank): LeaderWorkerSet's LWS_WORKER_INDEX (checked to be a whole
    number before any arithmetic) and LWS_LEADER_ADDRESS give the rank and the rank-0 host; expert parallel
    spreads vLLM's data-parallel ranks (local size, start rank, address), else tensor and pipeline parallel over
    the hosts (--nnodes/--node-rank/--master-addr); the pods above rank 0 run headless. Every word from the plan
    is single-quoted (the operator's values expand as shell variables from the container's environment)."""
    uri = artifacts["uri"]
    path = uri.split("://", 1)[1]  # hf://ORG/NAME, or pvc://CLAIM/PATH mounted at MOUNT_PATH
    model = path if uri.startswith("hf://") else f"{MOUNT_PATH}/{path.split('/', 1)[1]}"
    port = SERVICE_PORT if pool == "prefill" else PROXY_TARGET_PORT
    tp, pp = int(row["tensor_parallel"]), int(row["pipeline_parallel"])
    size = "--data-parallel-size" if row["expert_parallel"] else "--tensor-parallel-size"
    parallel = [size, str(tp), *multinode_args(row, rank="@RANK@", start="@START@", leader="@LEADER@",
                                               rpc_port=str(DP_RPC_PORT))]
    if pp > 1:
        parallel += ["--pipeline-parallel-size", str(pp)]
    words = ["vllm", "serve", model, "--port", str(port), *parallel, "--served-model-name", artifacts["name"],
             *launch.argv[3:]]
    raw = {"@START@": f'"$((LWS_WORKER_INDEX * {row.chips_per_node}))"', "@LEADER@": '"${LWS_LEADER_ADDRESS}"',
           "@RANK@": '"${LWS_WORKER_INDEX}"'}
    command = " ".join(raw.get(w) or shell_word(w, list(launch.needs)) for w in words)
    return ("set -eu; case \"${LWS_WORKER_INDEX:-}\" in ''|*[!0-9]*) echo 'LWS_WORKER_INDEX is not a whole number' "
            ">&2; exit 1;; esac; HEADLESS=; [ \"$LWS_WORKER_INDEX\" = 0 ] || HEADLESS=--headless; "
            f"exec {command} $HEADLESS")


PARALLEL_FLAGS = {"--tensor-parallel-size", "--data-parallel-size", "--pipeline-parallel-size"}


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
    return {"name": hf_id, "mountPath": MOUNT_PATH,
            "uri": f"hf://{hf_id}" if published else f"pvc://{CHECKPOINT_PVC}/{hf_id}-{row['precision']}",
            "size": f"{size_gib}Gi",
            "labels": {"llm-d.ai/inference-serving": "true", "llm-d.ai/model": pool_label}}


TARGET = LlmdTarget()
