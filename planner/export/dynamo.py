"""NVIDIA Dynamo: one DynamoGraphDeployment per workload (Kubernetes CRD nvidia.com/v1beta1, written against
Dynamo 1.6.1 and its vLLM backend, vLLM 0.31.0): a Frontend and one vLLM worker component per allocation row, with
the row's replicas, GPUs and engine arguments; prefill and decode rows as Dynamo's prefill and decode components.
The worker's command is judged by Dynamo's own parser and each manifest by the CRD's schema
(tests/test_engines_accept.py, tests/test_export.py)."""

from __future__ import annotations

import json

from planner.export.common import Launch, header_lines, row_comment
from planner.export.k8s import ManifestTarget, dns_name, env_of, k8s_args, needs_comments, yaml_file
from planner.export.rows import PlanRows, Refusal, Row, whole_replicas
from planner.export.vllm import KV_CONNECTOR, engine_args

ENGINE = "NVIDIA Dynamo"
VERSION = "1.6.1 (vLLM backend, vLLM 0.31.0)"
RELEASE = "1.6.1"  # the plain release, for the files' first comment line
VLLM_VERSION = "0.31.0"  # ai-dynamo 1.6.1's vllm extra pins it: the worker parses vLLM's arguments with it
REFERENCE = "https://docs.nvidia.com/dynamo/latest/kubernetes/api_reference.html"
API_VERSION = "nvidia.com/v1beta1"  # served since Dynamo 1.2, the storage version since 1.5; v1alpha1 deprecated
IMAGE = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.1"
WORKER = {"prefill": "VllmPrefillWorker", "decode": "VllmDecodeWorker", "colocated": "VllmWorker"}
TYPE = {"prefill": "prefill", "decode": "decode", "colocated": "worker"}  # v1beta1's component types
# v1beta1 holds at most 25 components in one graph: the Frontend and 24 workers
MAX_WORKERS = 24
# Each side's KV transfer over NIXL: 1.6.1's prefill worker refuses to start without it (dynamo/vllm/args.py), and
# the decode side gets its consumer half, as Dynamo's own profiler writes them
KV_ROLE = {"prefill": "kv_producer", "decode": "kv_consumer"}


class DynamoTarget(ManifestTarget):
    key, engine, version, release, reference = "dynamo", ENGINE, VERSION, RELEASE, REFERENCE
    image_words = "Dynamo's vLLM runtime image"

    def launch(self, row: Row) -> Launch:
        model, args, needs = engine_args(row, ENGINE)
        role = []
        if row["role"] in KV_ROLE:  # each side says which it is (1.4 replaced --is-prefill-worker/--is-decode-worker)
            role = ["--disaggregation-mode", row["role"], "--kv-transfer-config",
                    json.dumps({"kv_connector": KV_CONNECTOR, "kv_role": KV_ROLE[row["role"]]})]
        return Launch(row, ["python3", "-m", "dynamo.vllm", "--model", model, *args, *role], None, needs)

    def file_for(self, row: Row) -> str:
        return f"{dns_name(row['workload'])}.dynamo.yaml"

    def files(self, plan: PlanRows, launches: list[Launch]) -> dict[str, str]:
        by_file: dict[str, list[Launch]] = {}
        for ln in launches:
            by_file.setdefault(self.file_for(ln.row), []).append(ln)
        return {name: self.deployment(plan, lns) for name, lns in by_file.items()}

    def deployment(self, plan: PlanRows, launches: list[Launch]) -> str:
        """The workload's graph: the Frontend, then a component per row (v1beta1: a list of named components,
        each one pod template whose container ``main`` runs it; the Dynamo namespace is the operator's,
        Kubernetes namespace and graph name)."""
        workload = launches[0].row["workload"]
        if len(launches) > MAX_WORKERS:
            raise Refusal(launches[MAX_WORKERS].row, "workload",
                          f"{len(launches)} rows of {workload!r}: a DynamoGraphDeployment holds the Frontend and at "
                          f"most {MAX_WORKERS} workers", ENGINE)
        frontend = {"name": "main", "image": IMAGE, "command": ["python3", "-m", "dynamo.frontend"],
                    "args": ["--http-port", "8000"]}
        components = [{"name": "Frontend", "type": "frontend", "replicas": 1,
                       "podTemplate": {"spec": {"containers": [frontend]}}}]
        components += [self.worker(ln) for ln in launches]
        document = {"apiVersion": API_VERSION, "kind": "DynamoGraphDeployment",
                    "metadata": {"name": dns_name(plan.scenario, workload)},
                    "spec": {"backendFramework": "vllm", "components": components}}
        comments = header_lines(self, plan) + [c for ln in launches for c in row_comment(ln.row)]
        return yaml_file(comments + needs_comments(launches), [document])

    def worker(self, launch: Launch) -> dict:
        """A row's component: one pod a replica, or with a replica over several hosts, ``multinode.nodeCount``
        pods of the host's GPUs each (Dynamo's operator then adds vLLM's multi-node flags: --nnodes/--node-rank
        for tensor parallel, the data-parallel ranks' local size, start rank and address for expert parallel)."""
        row = launch.row
        gpus = str(row.chips_per_node)
        container = {"name": "main", "image": IMAGE, "command": launch.argv[:3], "args": k8s_args(launch.argv[3:]),
                     "resources": {"limits": {"nvidia.com/gpu": gpus}, "requests": {"nvidia.com/gpu": gpus}}}
        if launch.needs:
            container["env"] = env_of(launch)
        component = {"name": f"{WORKER[row['role']]}{row.index}", "type": TYPE[row["role"]],
                     "replicas": whole_replicas(row)}
        if row.nodes > 1:
            component["multinode"] = {"nodeCount": row.nodes}
        return {**component, "podTemplate": {"spec": {"containers": [container]}}}


TARGET = DynamoTarget()
