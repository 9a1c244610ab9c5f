"""Every command the exported files hand an engine: each shipped plan (tests/golden) and a set of hand-built rows
covering each setting the export writes, exported to every target. Scripts are run by bash with stand-in engines
that record their arguments (the argv the engine would get, after the shell); the Kubernetes targets' container
commands are read from their manifests with the operator's values set."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

import yaml

from planner.export import TARGETS, export_plan
from planner.export.common import ScriptTarget

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "plans"  # each shipped scenario's whole plan (regenerate.py)
STAND_IN = """#!/bin/sh
{ printf '%s\\0' "$(basename "$0")"; for a in "$@"; do printf '%s\\0' "$a"; done; } > "$ARGV_OUT"
"""
# The operator's values where a path would not do: a rank above 0 (so that the headless branch runs too) and
# the rank-0 host's address
SUPPLIED = {"NODE_RANK": "1", "MASTER_ADDR": "10.0.0.1", "DIST_INIT_ADDR": "10.0.0.1:20000"}
PROGRAMS = ("vllm", "python3", "python", "trtllm-serve", "vllm-router")
# Hand-built rows (tests/test_export.one_row_plan's fields) for the settings the shipped plans may not reach
VARIANTS = {
    "tp8-fp8-online": ("llama-3.1-70b", {}),
    "tp4-pp2-bf16": ("llama-3.1-70b", {"precision": "bf16", "tensor_parallel": 4, "pipeline_parallel": 2}),
    "fp4-checkpoint": ("llama-3.1-70b", {"precision": "fp4"}),
    "eagle-prefill": ("llama-3.1-70b", {"speculative": "eagle", "draft_tokens": 3, "role": "prefill"}),
    "eagle-decode": ("llama-3.1-70b", {"speculative": "eagle", "draft_tokens": 3, "role": "decode"}),
    "colocated": ("llama-3.1-70b", {"role": "colocated", "batch": 32}),
    "ep-decode-mtp": ("deepseek-v3", {"expert_parallel": True, "speculative": "mtp", "draft_tokens": 2,
                                       "batch": 256}),
    "ep-prefill": ("deepseek-v3", {"expert_parallel": True, "role": "prefill", "batch": 4}),
    "moe-tp": ("qwen3-235b-a22b", {"role": "colocated", "tensor_parallel": 4, "chips_per_replica": 4}),
    "draft-model": ("llama-3.1-70b", {"speculative": "draft_model", "draft_tokens": 4}),
    "tp16-over-hosts": ("llama-3.1-70b", {"tensor_parallel": 16, "chips_per_replica": 16, "node_chips": 8}),
    "ep32-over-hosts": ("deepseek-v3", {"expert_parallel": True, "tensor_parallel": 32, "chips_per_replica": 32,
                                        "node_chips": 4, "speculative": "mtp", "draft_tokens": 1}),
}


def golden_plans() -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in sorted(GOLDEN.glob("*.json"))}


def variant_plans() -> dict[str, dict]:
    from tests.test_export import one_row_plan

    plans = {}
    for name, (model, row) in VARIANTS.items():
        fields = dict(row)
        node = fields.pop("node_chips", None)
        plan = one_row_plan(model, **fields)
        if node:
            plan["inputs"]["hardware"]["gpu-x"]["rack"] = {"node_chips": {"value": node}}
        plans[f"row:{name}"] = plan
    return plans


def script_argv(body: str, needs: dict[str, str], work: Path, env: dict | None = None,
                shell: str = "bash") -> list[str]:
    """The argv the script's engine program gets, run by bash with stand-ins and each operator value set (and
    ``env``)."""
    bin_dir = work / "bin"
    bin_dir.mkdir(exist_ok=True)
    for program in PROGRAMS:
        (bin_dir / program).write_text(STAND_IN)
        (bin_dir / program).chmod(0o755)
    (work / "launch.sh").write_text(body)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(work), "ARGV_OUT": str(work / "argv"),
           **{var: SUPPLIED.get(var, f"/supplied/{var.lower()}") for var in needs}, **(env or {})}
    subprocess.run([shell, str(work / "launch.sh")], cwd=work, env=env, check=True, capture_output=True,
                   timeout=30)
    return (work / "argv").read_text().split("\0")[:-1]


def container_argv(container: dict) -> list[str]:
    """A manifest container's command and arguments with each ``$(VAR)`` set as the operator would."""
    words = list(container.get("command", [])) + list(container.get("args", []))
    return [w.replace("$(CHECKPOINT)", "/supplied/checkpoint").replace("$(DRAFT_MODEL)", "/supplied/draft_model")
            for w in words]


def chart_argv(values: dict) -> list[str]:
    """The command llm-d-modelservice's vllmServe writes for a pool (its _helpers.tpl: the model from the
    artifacts' URI, the port, the tensor, data and local data parallel sizes where above 1 from ``parallelism``,
    the served name), then the container's own arguments with the operator's values set."""
    pool = values["prefill"] if values["prefill"].get("create") else values["decode"]
    uri = values["modelArtifacts"]["uri"]
    protocol, rest = uri.split("://", 1)
    model = rest if protocol == "hf" else "/model-cache/" + rest.split("/", 1)[1]
    par = pool.get("parallelism", {})
    tp, dp = int(par.get("tensor", 1)), int(par.get("data", 1))
    local = int(par.get("dataLocal") or (dp // int(par.get("workers", 1))))
    argv = ["vllm", "serve", model, "--port", "8000"]
    for flag, size in (("--tensor-parallel-size", tp), ("--data-parallel-size", dp),
                       ("--data-parallel-size-local", local)):
        if size > 1:
            argv += [flag, str(size)]
    argv += ["--served-model-name", values["modelArtifacts"]["name"]]
    return argv + container_argv({"args": pool["containers"][0]["args"]})


def target_cases(name: str, plan: dict, target: str, work: Path) -> list[dict]:
    """Each command of one plan's export to one target: {case, target, argv, options}. A row the target refuses
    is no case (its refusal is tests/test_export.py's)."""
    from planner.errors import InputError

    try:
        out = export_plan(plan, target)
    except InputError:
        return []
    spec = TARGETS[target]
    cases = []
    for launch in out.launches:
        case = f"{name}: {target}: {launch.row.name}"
        file = out.files[spec.file_for(launch.row)]
        if isinstance(spec, ScriptTarget):
            argv = script_argv(file, launch.needs, work)
            options = None
            if "--extra_llm_api_options" in argv:
                options = yaml.safe_load((work / argv[argv.index("--extra_llm_api_options") + 1]).read_text())
            cases.append({"case": case, "target": target, "argv": argv, "options": options})
        elif target == "dynamo":
            graph = yaml.safe_load(file)
            for comp in graph["spec"]["components"]:
                if comp["type"] != "frontend" and comp["name"].endswith(f"Worker{launch.row.index}"):
                    main = next(c for c in comp["podTemplate"]["spec"]["containers"] if c["name"] == "main")
                    cases.append({"case": case, "target": target, "options": comp, "argv": container_argv(main)})
        else:  # llm-d: the chart's vllmServe command (chart_argv), or a multi-host pod's own command run by sh
            values = yaml.safe_load(file)
            pool = values["prefill"] if values["prefill"].get("create") else values["decode"]
            container = pool["containers"][0]
            if container["modelCommand"] == "custom":
                assert container["command"] == ["/bin/sh", "-c"], container["command"]
                lws = {"LWS_WORKER_INDEX": "1", "LWS_LEADER_ADDRESS": "10.0.0.1"}
                argv = script_argv(container["args"][0], launch.needs, work, lws, shell="sh")
            else:
                argv = chart_argv(values)
            cases.append({"case": case, "target": target, "argv": argv, "options": values})
    for router in spec.routers(out.launches):
        urls = {f"{side.upper()}_URLS": " ".join(f"http://{side}-{k}.example:800{k % 10}"
                                                  for k in range(router.replicas(side)))
                for side in ("prefill", "decode")}
        argv = script_argv(out.files[router.file], {}, work, urls)
        cases.append({"case": f"{name}: {target}: {router.file}", "target": target, "argv": argv, "options": urls})
    return cases


def all_cases(targets=None) -> list[dict]:
    plans = {**golden_plans(), **variant_plans()}
    cases = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, plan in plans.items():
            for target in targets or TARGETS:
                cases += target_cases(name, plan, target, Path(tmp))
    return cases


if __name__ == "__main__":
    import sys

    print(json.dumps(all_cases(sys.argv[1:] or None), indent=1))
