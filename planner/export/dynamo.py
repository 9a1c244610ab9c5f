"""NVIDIA Dynamo: one DynamoGraphDeployment per workload (Kubernetes CRD nvidia.com/v1alpha1, written against
Dynamo 0.7.0 and its vLLM backend): a Frontend and one vLLM worker service per allocation row, with the row's
replicas, GPUs and engine arguments; prefill and decode rows as Dynamo's prefill and decode workers."""

from __future__ import annotations

from planner.export.common import Launch, header_lines, row_comment
from planner.export.k8s import ManifestTarget, dns_name, env_of, k8s_args, needs_comments, yaml_file
from planner.export.rows import PlanRows, Row, whole_replicas
from planner.export.vllm import engine_args

ENGINE = "NVIDIA Dynamo"
VERSION = "0.7.0 (vLLM backend, vLLM 0.11.0)"
RELEASE = "0.7.0"  # the plain release, for the files' first comment line
REFERENCE = "https://docs.nvidia.com/dynamo/archive/0.7.0/kubernetes/api_reference.html"
IMAGE = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.7.0"
WORKER = {"prefill": "VllmPrefillWorker", "decode": "VllmDecodeWorker", "colocated": "VllmWorker"}


class DynamoTarget(ManifestTarget):
    key, engine, version, release, reference = "dynamo", ENGINE, VERSION, RELEASE, REFERENCE
    image_words = "Dynamo's vLLM runtime image"

    def launch(self, row: Row) -> Launch:
        model, args, needs = engine_args(row, ENGINE)
        # Dynamo's vLLM worker joins a prefill worker to the decode workers over NIXL itself; each side says which it
        # is (0.7's disaggregated examples; a decode worker without its flag registers as an aggregated one)
        role = {"prefill": ["--is-prefill-worker"], "decode": ["--is-decode-worker"]}.get(row["role"], [])
        return Launch(row, ["python3", "-m", "dynamo.vllm", "--model", model, *args, *role], None, needs)

    def file_for(self, row: Row) -> str:
        return f"{dns_name(row['workload'])}.dynamo.yaml"

    def files(self, plan: PlanRows, launches: list[Launch]) -> dict[str, str]:
        by_file: dict[str, list[Launch]] = {}
        for ln in launches:
            by_file.setdefault(self.file_for(ln.row), []).append(ln)
        return {name: self.deployment(plan, lns) for name, lns in by_file.items()}

    def deployment(self, plan: PlanRows, launches: list[Launch]) -> str:
        workload = launches[0].row["workload"]
        namespace = dns_name(plan.scenario, workload)
        services = {"Frontend": {"dynamoNamespace": namespace, "componentType": "frontend", "replicas": 1,
                                 "extraPodSpec": {"mainContainer": {
                                     "image": IMAGE, "command": ["python3", "-m", "dynamo.frontend"],
                                     "args": ["--http-port", "8000"]}}}}
        for ln in launches:
            services[f"{WORKER[ln.row['role']]}{ln.row.index}"] = self.worker(ln, namespace)
        document = {"apiVersion": "nvidia.com/v1alpha1", "kind": "DynamoGraphDeployment",
                    "metadata": {"name": namespace}, "spec": {"backendFramework": "vllm", "services": services}}
        comments = header_lines(self, plan) + [c for ln in launches for c in row_comment(ln.row)]
        return yaml_file(comments + needs_comments(launches), [document])

    def worker(self, launch: Launch, namespace: str) -> dict:
        row = launch.row
        service = {"dynamoNamespace": namespace, "componentType": "worker"}
        if row["role"] in ("prefill", "decode"):
            service["subComponentType"] = row["role"]
        container = {"image": IMAGE, "command": launch.argv[:3], "args": k8s_args(launch.argv[3:])}
        if launch.needs:
            container["env"] = env_of(launch)
        return {**service, "replicas": whole_replicas(row),
                "resources": {"limits": {"gpu": str(row["chips_per_replica"])}},
                "extraPodSpec": {"mainContainer": container}}


TARGET = DynamoTarget()
