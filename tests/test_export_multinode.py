"""Issue 42: a replica of more chips than one host holds (16-64 GPUs) was written as one process or one pod, with
none of the engines' multi-node settings: a 64-GPU pod is unschedulable. The catalog gives each system's host
size (rack.node_chips) and the export spans the hosts: vLLM's and SGLang's scripts run once a host with its rank,
Dynamo's component gets multinode.nodeCount and a host's GPUs a pod, llm-d's values a LeaderWorkerSet whose pods
each run their rank's share; TensorRT-LLM skips such a row, saying why (exit 2 with --strict)."""

from __future__ import annotations

import json

import pytest
import yaml

from planner import catalog
from planner.errors import InputError
from planner.export import export_plan
from tests.test_export import one_row_plan
from tests.test_export_safety import pwned, run_script


def hosted(node_chips: int, model: str = "llama-3.1-70b", **row) -> dict:
    plan = one_row_plan(model, **row)
    plan["inputs"]["hardware"]["gpu-x"]["rack"] = {"node_chips": {"value": node_chips}}
    return plan


def script(plan: dict, target: str) -> str:
    return next(b for f, b in export_plan(plan, target).files.items() if f.endswith(".sh") and "router" not in f)


def test_every_system_an_engine_serves_says_how_many_chips_one_host_holds():
    from planner.catalog import serving_engines

    families = {f for key in ("vllm", "sglang", "trtllm") for f in serving_engines()[key].families}
    for hw in catalog.hardware_catalog().values():
        if hw.family in families:
            assert hw.rack.node_chips is not None, hw.id
            assert hw.rack.chips.value % hw.rack.node_chips.value == 0, hw.id


def test_tensor_parallel_over_two_hosts_runs_vllm_s_and_sglang_s_multi_node_settings(tmp_path):
    plan = hosted(4)  # TP 8 over NVL72 compute trays of 4
    vllm = export_plan(plan, "vllm").launches[0]
    assert set(vllm.needs) >= {"NODE_RANK", "MASTER_ADDR"}
    argv = run_script(tmp_path, script(plan, "vllm"), {"NODE_RANK": "0", "MASTER_ADDR": "10.0.0.1"})
    assert argv[argv.index("--nnodes") + 1] == "2" and argv[argv.index("--node-rank") + 1] == "0"
    assert argv[argv.index("--master-addr") + 1] == "10.0.0.1" and "--headless" not in argv
    worker = run_script(tmp_path, script(plan, "vllm"), {"NODE_RANK": "1", "MASTER_ADDR": "10.0.0.1"})
    assert "--headless" in worker  # the ranks above 0 serve no API
    sgl = run_script(tmp_path, script(plan, "sglang"), {"NODE_RANK": "1", "DIST_INIT_ADDR": "10.0.0.1:20000"})
    assert sgl[sgl.index("--nnodes") + 1] == "2" and sgl[sgl.index("--dist-init-addr") + 1] == "10.0.0.1:20000"
    one_host = export_plan(hosted(8), "vllm").launches[0]
    assert "--nnodes" not in one_host.argv and "NODE_RANK" not in one_host.needs


def test_expert_parallel_over_hosts_spreads_vllm_s_data_parallel_ranks(tmp_path):
    plan = hosted(4, "deepseek-v3", expert_parallel=True, tensor_parallel=16, chips_per_replica=16)
    argv = run_script(tmp_path, script(plan, "vllm"), {"NODE_RANK": "3", "MASTER_ADDR": "10.0.0.1"})
    assert argv[argv.index("--data-parallel-size") + 1] == "16"
    assert argv[argv.index("--data-parallel-size-local") + 1] == "4"
    assert argv[argv.index("--data-parallel-start-rank") + 1] == "12"  # rank 3 x 4 local ranks
    assert argv[argv.index("--data-parallel-address") + 1] == "10.0.0.1" and "--headless" in argv


@pytest.mark.parametrize("rank", ["2", "-1", "x", "0$(touch PWNED1)", "1`touch PWNED2`", "a[$(touch PWNED3)]"])
def test_a_rank_that_is_not_a_host_of_the_replica_stops_the_script_and_runs_nothing(tmp_path, rank):
    """NODE_RANK is checked before bash does any arithmetic with it (an array subscript in $((...)) would run)."""
    import subprocess

    plan = hosted(4, "deepseek-v3", expert_parallel=True, tensor_parallel=8, chips_per_replica=8)
    path = tmp_path / "launch.sh"
    path.write_text(script(plan, "vllm"))
    done = subprocess.run(["bash", str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=30,
                          env={"PATH": "/usr/bin:/bin", "NODE_RANK": rank, "MASTER_ADDR": "h"})
    assert done.returncode == 1 and "NODE_RANK must be a whole number from 0 to 1" in done.stderr
    assert pwned(tmp_path) == []


def test_dynamo_spans_hosts_with_multinode_and_a_host_s_gpus_a_pod():
    out = export_plan(hosted(4), "dynamo")
    graph = yaml.safe_load(next(b for f, b in out.files.items() if f.endswith(".yaml")))
    worker = graph["spec"]["components"][1]
    assert worker["multinode"] == {"nodeCount": 2}
    limits = worker["podTemplate"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits["nvidia.com/gpu"] == "4"
    single = yaml.safe_load(next(b for f, b in export_plan(hosted(8), "dynamo").files.items() if f.endswith(".yaml")))
    assert "multinode" not in single["spec"]["components"][1]


def test_tensor_parallel_over_hosts_skips_in_trtllm_saying_why():
    out = export_plan(hosted(4), "trtllm")
    assert not out.launches and out.skipped[0]["reason"].startswith("a replica over 2 hosts of 4 chips (8 chips)")
    with pytest.raises(InputError, match="a replica over 2 hosts"):
        export_plan(hosted(4), "trtllm", strict=True)
    assert export_plan(hosted(8), "trtllm").launches


@pytest.mark.parametrize("index, ok", [("0", True), ("3", True), ("", False), ("1;touch PWNED1", False),
                                       ("$(touch PWNED2)", False)])
def test_llm_d_spans_hosts_as_a_leader_worker_set_each_pod_its_own_rank(tmp_path, index, ok):
    """The chart's vllmServe hands every pod of its LeaderWorkerSet the same arguments; a multi-host replica's pods
    each run their own share instead (a custom command of fixed text: LWS_WORKER_INDEX, checked to be a whole
    number, and LWS_LEADER_ADDRESS from LeaderWorkerSet; everything from the plan single-quoted)."""
    import subprocess

    plan = hosted(4, "deepseek-v3", expert_parallel=True, tensor_parallel=16, chips_per_replica=16)
    values = yaml.safe_load(next(b for f, b in export_plan(plan, "llm-d").files.items() if f.endswith(".yaml")))
    assert values["multinode"] is True
    pool = values["decode"]
    assert pool["parallelism"] == {"tensor": 1, "data": 16, "dataLocal": 4, "workers": 4}
    container = pool["containers"][0]
    assert container["modelCommand"] == "custom" and container["command"] == ["/bin/sh", "-c"]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "4"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "vllm").write_text("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done > \"$ARGV_OUT\"\n")
    (bin_dir / "vllm").chmod(0o755)
    done = subprocess.run(["sh", "-c", container["args"][0]], cwd=tmp_path, capture_output=True, text=True,
                          timeout=30, env={"PATH": f"{bin_dir}:/usr/bin:/bin", "ARGV_OUT": str(tmp_path / "argv"),
                                           "LWS_WORKER_INDEX": index, "LWS_LEADER_ADDRESS": "10.0.0.1"})
    assert pwned(tmp_path) == []
    if not ok:
        assert done.returncode == 1 and "not a whole number" in done.stderr
        return
    argv = (tmp_path / "argv").read_text().split("\0")[:-1]
    assert argv[argv.index("--data-parallel-start-rank") + 1] == str(int(index) * 4)
    assert argv[argv.index("--data-parallel-address") + 1] == "10.0.0.1"
    assert ("--headless" in argv) == (index != "0")


def test_a_replica_that_does_not_split_evenly_over_its_hosts_is_refused():
    plan = hosted(4, tensor_parallel=5, pipeline_parallel=2, chips_per_replica=10)
    with pytest.raises(InputError) as err:
        export_plan(plan, "vllm")
    assert err.value.field == "chips_per_replica" and "3 hosts of 4 chips" in str(err.value)


def test_a_plan_without_host_sizes_is_one_host_a_replica():
    """A hand-built system the plan's catalog gives no host size is taken as one host (docs/EXPORT.md)."""
    argv = export_plan(one_row_plan(tensor_parallel=8), "vllm").launches[0].argv
    assert "--nnodes" not in argv
    assert json.loads(export_plan(one_row_plan(), "vllm").files["manifest.json"])["routers"] == []
