"""planner export (docs/EXPORT.md): every row of every shipped scenario's plan exported or skipped with a reason,
in each target; argument names checked against each engine's documented ones; settings a target cannot express
refused with exit 2 naming the row and the setting; CLI output is the library's; --out writes whole files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from planner import catalog
from planner.cli import main
from planner.errors import InputError
from planner.export import TARGETS, export_plan, write_export

pytestmark = pytest.mark.integration  # solves the shipped scenarios (once per module)

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = sorted(p.stem for p in (ROOT / "scenarios").glob("*.yaml"))

# The engines' option names the export may write, each set from its reference page (the versions docs/EXPORT.md
# states); the engines' own parsers judge the whole commands (tests/test_engines_accept.py).
VLLM_FLAGS = {  # https://docs.vllm.ai/en/v0.34.0/configuration/engine_args.html
    "--tensor-parallel-size", "--pipeline-parallel-size", "--data-parallel-size", "--enable-expert-parallel",
    "--nnodes", "--node-rank", "--master-addr", "--data-parallel-size-local", "--data-parallel-start-rank",
    "--data-parallel-address", "--data-parallel-rpc-port",
    "--max-num-seqs", "--max-num-batched-tokens", "--max-model-len", "--kv-cache-dtype", "--quantization",
    "--speculative-config", "--kv-transfer-config", "--dtype", "--port"}
VLLM_SPECULATIVE_KEYS = {"method", "model", "num_speculative_tokens"}  # SpeculativeConfig, same page
VLLM_METHODS = {"eagle", "eagle3", "mtp", "ngram", "draft_model"}  # 0.34 deprecated deepseek_mtp into mtp
SGLANG_FLAGS = {  # https://docs.sglang.ai/advanced_features/server_arguments.html (0.5.23)
    "--model-path", "--tp-size", "--pp-size", "--ep-size",
    "--max-running-requests", "--chunked-prefill-size", "--kv-cache-dtype", "--quantization",
    "--speculative-algorithm", "--speculative-draft-model-path", "--speculative-num-steps",
    "--speculative-eagle-topk", "--speculative-num-draft-tokens", "--disaggregation-mode",
    "--disaggregation-transfer-backend", "--disaggregation-bootstrap-port", "--attn-dp-size", "--host", "--port",
    "--nnodes", "--node-rank", "--dist-init-addr"}
SGLANG_VALUES = {"--speculative-algorithm": {"EAGLE", "EAGLE3", "NEXTN", "STANDALONE"},
                 "--disaggregation-mode": {"null", "prefill", "decode"},
                 "--disaggregation-transfer-backend": {"mooncake", "nixl"},
                 "--kv-cache-dtype": {"auto", "fp8_e5m2", "fp8_e4m3"}}
# https://nvidia.github.io/TensorRT-LLM/1.1.0/commands/trtllm-serve
TRTLLM_FLAGS = {"--extra_llm_api_options", "--port"}
TRTLLM_OPTIONS = {  # LlmArgs, https://nvidia.github.io/TensorRT-LLM/1.1.0/llm-api/reference.html
    "tensor_parallel_size", "pipeline_parallel_size", "moe_expert_parallel_size", "enable_attention_dp",
    "max_batch_size", "max_num_tokens", "kv_cache_config", "speculative_config", "cache_transceiver_config"}
TRTLLM_NESTED = {"kv_cache_config": {"dtype"},  # KvCacheConfig
                 "speculative_config": {"decoding_type", "num_nextn_predict_layers", "max_draft_len",
                                        "speculative_model_dir"},  # MTPDecodingConfig, EagleDecodingConfig
                 "cache_transceiver_config": {"backend"}}  # CacheTransceiverConfig
TRTLLM_DECODING = {"MTP", "Eagle", "DraftTarget"}
# dynamo.vllm 1.6.1: vLLM's engine args and its own (1.4 replaced --is-prefill-worker/--is-decode-worker)
DYNAMO_FLAGS = VLLM_FLAGS | {"--model", "--disaggregation-mode"}
# DynamoGraphDeployment v1beta1 (tests/data/schemas: the CRD's schema)
DYNAMO_COMPONENT_KEYS = {"name", "type", "replicas", "multinode", "podTemplate"}
# https://github.com/llm-d-incubation/llm-d-modelservice/blob/main/charts/llm-d-modelservice/values.yaml
LLMD_KEYS = {"modelArtifacts", "routing", "decode", "prefill", "multinode"}
LLMD_POOL_KEYS = {"create", "replicas", "parallelism", "containers"}
LLMD_PARALLELISM = {"tensor", "data", "dataLocal", "workers"}
FLAGS = {"vllm": VLLM_FLAGS, "sglang": SGLANG_FLAGS, "trtllm": TRTLLM_FLAGS, "dynamo": DYNAMO_FLAGS,
         "llm-d": VLLM_FLAGS}
NON_GPU = {"dmatrix-corsair", "groq3-lpu", "groq-lpu", "cerebras-wafer", "sambanova-rdu", "sambanova-rdu2",
           "taalas-asic", "etched-asic", "tensordyne-lns"}


@pytest.fixture(scope="module")
def plans():
    """Each shipped scenario's plan, solved once for the module (lazily, as the tests ask for them), as
    tests/golden/regenerate.py solves it: the MILP's plan, not simulated (export reads the plan alone; the build-out's
    simulation of its twelve periods made this fixture 196 s of the suite's run)."""
    from tests.shipped import shipped_plan  # solved once a run, whatever other files read it

    cache: dict[str, dict] = {}

    def plan(name: str) -> dict:
        if name not in cache:
            cache[name] = json.loads(json.dumps(shipped_plan(name).to_dict()))
        return cache[name]
    return plan


def periods_rows(plan: dict) -> list[dict]:
    if "first_period_order" not in plan:
        return plan["allocation"]
    scenarios = plan.get("scenarios") or [{"periods": plan["periods"]}]
    best = max(range(len(scenarios)), key=lambda k: (float(scenarios[k].get("probability") or 0.0), -k))
    return scenarios[best]["periods"][-1]["allocation"]


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_row_exported_or_skipped_with_a_reason(plans, scenario, target):
    plan = plans(scenario)
    rows = periods_rows(plan)
    out = export_plan(plan, target)
    launched = [ln.row.index for ln in out.launches]
    skipped = [s["row"] for s in out.skipped]
    assert sorted(launched + skipped) == list(range(len(rows)))
    assert launched, f"{scenario}: no row exported for {target}"
    for s in out.skipped:  # only hosted APIs, chips the target does not serve, and rows a replica pool's launch runs
        assert s["reason"].startswith(("a hosted API", "hardware ", "FFN hardware ", "served by row ",
                                       "a replica over ")), s
        if s["reason"].startswith("a replica over "):  # only the targets that write no multi-host launch
            assert target == "trtllm", s
    for ln in out.launches:
        assert ln.row.family not in NON_GPU and ln.row["acquisition"] != "api"
        assert TARGETS[target].file_for(ln.row) in out.files
    manifest = json.loads(out.files["manifest.json"])
    assert manifest["target"] == target and manifest["engine_version"] == TARGETS[target].version
    assert [r["row"] for r in manifest["exported"]] == launched and manifest["skipped"] == out.skipped


@pytest.mark.parametrize("target", list(TARGETS))
def test_argument_names_are_the_engines_documented_ones(plans, target):
    launches = [ln for name in SCENARIOS for ln in export_plan(plans(name), target).launches]
    assert launches
    for ln in launches:
        assert set(ln.flags()) <= FLAGS[target], f"{ln.row.name}: {set(ln.flags()) - FLAGS[target]}"
        args = dict(zip(ln.argv, ln.argv[1:]))
        if target in ("vllm", "dynamo", "llm-d") and "--speculative-config" in args:
            spec = json.loads(args["--speculative-config"])
            assert set(spec) <= VLLM_SPECULATIVE_KEYS and spec.get("method", "eagle3") in VLLM_METHODS
        if target == "sglang":
            for flag, allowed in SGLANG_VALUES.items():
                assert flag not in args or args[flag] in allowed, (flag, args.get(flag))
        if target == "trtllm":
            assert set(ln.options) <= TRTLLM_OPTIONS
            for key, allowed in TRTLLM_NESTED.items():
                assert set(ln.options.get(key, {})) <= allowed
            assert ln.options.get("speculative_config", {}).get("decoding_type", "MTP") in TRTLLM_DECODING


def test_values_come_from_the_row(plans):
    out = export_plan(plans("bank-2mw"), "vllm")
    for ln in out.launches:
        args = dict(zip(ln.argv, ln.argv[1:]))
        r = ln.row
        assert args["--max-num-seqs"] == str(r["batch"])
        assert args["--pipeline-parallel-size"] == str(r["pipeline_parallel"])
        assert args["--tensor-parallel-size"] == str(1 if r["expert_parallel"] else r["tensor_parallel"])
        assert args["--kv-cache-dtype"] == ("fp8" if r["precision"] in ("fp8", "fp4") else "auto")
        assert ("--kv-transfer-config" in args) == (r["role"] in ("prefill", "decode"))
        if r["speculative"] != "none":
            assert json.loads(args["--speculative-config"])["num_speculative_tokens"] == r["draft_tokens"]
    sg = export_plan(plans("bank-2mw"), "sglang").launches
    spec = [dict(zip(ln.argv, ln.argv[1:])) for ln in sg if ln.row["speculative"] == "eagle"]
    assert spec and all(int(a["--speculative-num-draft-tokens"]) == int(a["--speculative-num-steps"]) + 1
                        for a in spec)


@pytest.mark.parametrize("target", ["dynamo", "llm-d"])
def test_manifests_carry_replica_counts(plans, target):
    out = export_plan(plans("sovereign-100mw"), target)
    import math

    want = sorted(max(1, math.ceil(float(ln.row["replicas"]) - 1e-9)) for ln in out.launches)
    got = []
    for name, body in out.files.items():
        if not name.endswith(".yaml"):
            continue
        doc = yaml.safe_load(body)
        if target == "dynamo":
            assert doc["kind"] == "DynamoGraphDeployment" and doc["apiVersion"] == "nvidia.com/v1beta1"
            for comp in doc["spec"]["components"]:
                assert set(comp) <= DYNAMO_COMPONENT_KEYS, comp["name"]
                if comp["type"] != "frontend":
                    got.append(comp["replicas"])
        else:
            assert set(doc) <= LLMD_KEYS
            pool = doc["prefill"] if doc["prefill"].get("create") else doc["decode"]
            assert set(pool) <= LLMD_POOL_KEYS and set(pool["parallelism"]) <= LLMD_PARALLELISM
            container = pool["containers"][0]  # a multi-host replica's pods run their own share (test_export_multinode)
            assert container["args"] and container["modelCommand"] == ("custom" if doc.get("multinode") else
                                                                        "vllmServe")
            got.append(pool["replicas"])
    assert sorted(got) == want


# ---- hand-built rows the targets must refuse -------------------------------------------------------------------

def one_row_plan(model: str = "llama-3.1-70b", family: str = "nvidia-gpu", **row) -> dict:
    base = {"workload": "w", "role": "decode", "hardware": "gpu-x", "replicas": 2.0, "chips_per_replica": 8,
            "tensor_parallel": 8, "pipeline_parallel": 1, "expert_parallel": False, "batch": 64, "precision": "fp8",
            "speculative": "none", "draft_tokens": 0, "acceptance": 0.0, "engines": "trtllm,sglang,vllm",
            "ffn_hardware": None, "acquisition": "owned", "source": "model"}
    m = catalog.get_model(model)
    return {"status": "optimal", "scenario": "hand-built", "allocation": [{**base, **row}],
            "inputs": {"models": {model: json.loads(m.model_dump_json())},
                       "hardware": {"gpu-x": {"family": family}},
                       "demands": [{"name": "w", "model": model, "prefill_tokens": 1000.0}]}}


REFUSED = [
    ({"speculative": "medusa", "draft_tokens": 3}, "speculative", ["vllm", "sglang", "trtllm", "dynamo", "llm-d"]),
    ({"speculative": "mtp", "draft_tokens": 2}, "speculative", ["vllm", "sglang", "trtllm", "dynamo", "llm-d"]),
    ({"role": "attention"}, "role", ["vllm", "sglang", "trtllm", "dynamo", "llm-d"]),
    ({"tensor_parallel": 3, "chips_per_replica": 3}, "tensor_parallel", ["vllm", "sglang", "trtllm"]),
    ({"chips_per_replica": 16}, "chips_per_replica", ["vllm", "sglang", "trtllm"]),
    ({"expert_parallel": True}, "expert_parallel", ["vllm", "sglang", "trtllm"]),
]


@pytest.mark.parametrize("row, setting, targets", REFUSED)
def test_a_setting_the_target_cannot_express_is_exit_2_naming_row_and_setting(tmp_path, row, setting, targets):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(one_row_plan(**row)))
    for target in targets:
        with pytest.raises(InputError) as err:
            export_plan(str(path), target)
        assert err.value.field == setting and str(err.value).startswith(f"row 0 (w {row.get('role', 'decode')} "), \
            str(err.value)
        result = CliRunner().invoke(main, ["export", str(path), "--to", target])
        assert result.exit_code == 2 and "row 0" in result.output and setting in result.output, result.output


def test_a_precision_no_plan_holds_is_refused_by_the_plan_s_reader():
    """A precision outside the vocabulary (a tampered plan) stops at the plan's one reader (planner.fleet.rows),
    naming the field, before any target sees it (issue 43)."""
    for target in TARGETS:
        with pytest.raises(InputError) as err:
            export_plan(one_row_plan(precision="int4"), target)
        assert err.value.field == "allocation[0].precision" and "expected one of" in str(err.value)


def test_pipeline_stages_with_data_parallel_attention_are_refused():
    plan = one_row_plan("qwen3-235b-a22b", expert_parallel=True, tensor_parallel=4, pipeline_parallel=2,
                        chips_per_replica=8)
    for target in ("vllm", "sglang", "trtllm"):
        with pytest.raises(InputError, match="pipeline_parallel 2"):
            export_plan(plan, target)


def test_a_non_gpu_row_is_skipped_unless_strict_or_asked_for():
    plan = one_row_plan(family="dmatrix-corsair")
    out = export_plan(plan, "vllm")
    assert not out.launches and "dmatrix-corsair" in out.skipped[0]["reason"]
    assert "## Skipped rows" in out.files["README.md"]
    with pytest.raises(InputError, match="does not run it"):
        export_plan(plan, "vllm", strict=True)
    with pytest.raises(InputError, match="does not run it"):
        export_plan(plan, "vllm", row=0)
    api = one_row_plan(role="api", acquisition="api", hardware="api:offer")
    assert "hosted API" in export_plan(api, "sglang").skipped[0]["reason"]


def test_an_sglang_expert_parallel_server_is_attention_data_parallel_as_0_5_23_spells_it():
    """Issue 42: 0.5.4's decode server of dp-size > 1 asserted --prefill-round-robin-balance; 0.5.23 removed the flag
    (its parser refuses it) and deprecated --dp-size with --enable-dp-attention for --attn-dp-size (a bare
    --dp-size now counts whole replicas). A prefill server names its bootstrap port; every server listens on all
    addresses (its default, 127.0.0.1, would hide it from the router)."""
    moe = dict(model="deepseek-r1", precision="fp8", expert_parallel=True, role="decode")
    argv = export_plan(one_row_plan(**moe), "sglang").launches[0].argv
    assert argv[argv.index("--attn-dp-size") + 1] == "8" and argv[argv.index("--ep-size") + 1] == "8"
    assert not {"--dp-size", "--enable-dp-attention", "--prefill-round-robin-balance"} & set(argv)
    prefill = export_plan(one_row_plan(**dict(moe, role="prefill")), "sglang").launches[0].argv
    assert prefill[prefill.index("--disaggregation-bootstrap-port") + 1] == "$BOOTSTRAP_PORT"
    assert "--disaggregation-bootstrap-port" not in argv
    assert all(a[a.index("--host") + 1] == "0.0.0.0" for a in (argv, prefill))


def test_vllm_s_batch_is_per_data_parallel_rank():
    """Issue 42: vLLM applies --max-num-seqs to each data-parallel rank, so an expert-parallel replica of batch 64
    over 8 ranks set 64 on each and admitted 512 streams; each rank now takes 8 (and its share of the tokens)."""
    moe = dict(model="deepseek-r1", precision="fp8", expert_parallel=True, role="decode", batch=64,
               speculative="none")
    for target in ("vllm", "dynamo", "llm-d"):
        out = export_plan(one_row_plan(**moe), target)
        argv = out.launches[0].argv
        if target == "llm-d":  # the chart writes the data-parallel size from parallelism
            assert yaml.safe_load(next(b for f, b in out.files.items() if f.endswith(".yaml")))[
                "decode"]["parallelism"]["data"] == 8
        else:
            assert argv[argv.index("--data-parallel-size") + 1] == "8", target
        assert argv[argv.index("--max-num-seqs") + 1] == "8", target
        assert argv[argv.index("--max-num-batched-tokens") + 1] == "8", target
    dense = export_plan(one_row_plan(batch=64), "vllm").launches[0].argv
    assert dense[dense.index("--max-num-seqs") + 1] == "64"


def test_dynamo_workers_say_which_side_of_a_disaggregated_pair_they_are():
    """Issue 42: Dynamo's decode workers lacked 0.7's --is-decode-worker; 1.4 replaced both flags with
    --disaggregation-mode, and 1.6's prefill worker refuses to start without its KV transfer config (producer; the
    decode side the consumer, as Dynamo's own profiler writes them). A colocated worker sets neither."""
    argv = {role: export_plan(one_row_plan(role=role), "dynamo").launches[0].argv
            for role in ("prefill", "decode", "colocated")}
    for role, kv_role in (("prefill", "kv_producer"), ("decode", "kv_consumer")):
        a = argv[role]
        assert a[a.index("--disaggregation-mode") + 1] == role
        assert json.loads(a[a.index("--kv-transfer-config") + 1]) == {"kv_connector": "NixlConnector",
                                                                      "kv_role": kv_role}
    assert not {"--disaggregation-mode", "--kv-transfer-config", "--is-prefill-worker", "--is-decode-worker"} & \
        set(argv["colocated"])


def test_values_the_plan_does_not_hold_are_named_for_the_operator():
    out = export_plan(one_row_plan(speculative="eagle", draft_tokens=3, precision="fp4"), "vllm")
    needs = out.launches[0].needs
    assert set(needs) == {"CHECKPOINT", "DRAFT_MODEL"}
    script = next(body for name, body in out.files.items() if name.endswith(".sh"))
    assert '[ -n "${DRAFT_MODEL:-}" ] ||' in script and '"${CHECKPOINT}"' in script
    online = export_plan(one_row_plan(precision="fp8"), "vllm").launches[0]  # vLLM quantizes bf16 to fp8 on load
    assert not online.needs and online.argv[2] == "meta-llama/Llama-3.1-70B-Instruct"
    assert "--quantization" in online.argv


# ---- the command ----------------------------------------------------------------------------------------------

def test_cli_prints_what_the_library_returns(plans, tmp_path):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plans("gtc-2026-tiers")))
    for target in TARGETS:
        result = CliRunner().invoke(main, ["export", str(path), "--to", target])
        assert result.exit_code == 0, result.output
        assert result.output == export_plan(str(path), target).text()


def test_out_writes_every_file_whole(plans, tmp_path, monkeypatch):
    import planner.export as files  # the writer export calls (planner.writing.atomic_write)

    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plans("gtc-2026-tiers")))
    atomic = []
    real = files.atomic_write
    monkeypatch.setattr(files, "atomic_write", lambda p, data: (atomic.append(Path(p).name), real(p, data)))
    out_dir = tmp_path / "out"
    result = CliRunner().invoke(main, ["export", str(path), "--to", "trtllm", "--out", str(out_dir)])
    assert result.exit_code == 0, result.output
    want = export_plan(str(path), "trtllm").files
    assert sorted(atomic) == sorted(want)
    written = {p.name: p.read_text() for p in out_dir.iterdir() if p.name != ".planner.lock"}  # the folder's lock
    assert written == want  # no temporary file left behind
    assert all(p.stat().st_mode & 0o111 for p in out_dir.glob("*.sh"))
    (tmp_path / "afile").write_text("x")
    bad = CliRunner().invoke(main, ["export", str(path), "--to", "vllm", "--out", str(tmp_path / "afile")])
    assert bad.exit_code == 2


def test_buildout_exports_the_last_period_or_the_one_asked(plans):
    plan = plans("buildout-2027-2030")
    last = export_plan(plan, "vllm")
    dates = json.loads(last.files["manifest.json"])
    assert dates["period"] == "2030-01-01" and dates["demand_scenario"] == "base"
    first = export_plan(plan, "vllm", period="2027-01-01", demand_scenario="low")
    assert json.loads(first.files["manifest.json"])["period"] == "2027-01-01"
    with pytest.raises(InputError, match="not a period"):
        export_plan(plan, "vllm", period="2031-01-01")
    with pytest.raises(InputError, match="one period"):
        export_plan(plans("bank-2mw"), "vllm", period="2027-01-01")


def test_unknown_target_and_help_name_the_registry(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(one_row_plan()))
    bad = CliRunner().invoke(main, ["export", str(path), "--to", "tgi"])
    assert bad.exit_code == 2 and all(t in bad.output for t in TARGETS)
    helptext = CliRunner().invoke(main, ["export", "--help"]).output
    assert all(t in helptext for t in TARGETS)


def test_write_export_is_the_library_of_out(tmp_path):
    out = export_plan(one_row_plan(), "sglang")
    written = write_export(out, tmp_path / "x")
    assert sorted(p.name for p in written) == sorted(out.files)


def test_a_replica_pool_is_one_launch_of_its_summed_shares(tmp_path):
    """Rows of one replica pool (OPTIMIZER.md 16) are one deployment: a launch per row started four A100 replicas
    for the Melange example's four shares of one (0.3 + 0.15 + 0.25 + 0.3)."""
    import planner

    plan = planner.solve("benchmarks/data/melange-peer.yaml", verify="off").to_dict()
    pooled = [r for r in plan["allocation"] if r["replica_pool"] is not None]
    groups = {(r["hardware"], r["replica_pool"]) for r in pooled}
    out = export_plan(plan, "vllm", strict=True)
    launched = {(ln.row["hardware"], ln.row["replica_pool"]): ln for ln in out.launches
                if ln.row["replica_pool"] is not None}
    assert set(launched) == groups  # one launch per pool
    a100 = [r for r in pooled if r["hardware"] == "a100-80gb-1gpu"]
    assert len(a100) == 4 and launched[("a100-80gb-1gpu", a100[0]["replica_pool"])].row["replicas"] == pytest.approx(
        sum(r["replicas"] for r in a100))
    served = [s for s in out.skipped if "served by row" in s["reason"]]
    assert len(served) == len(pooled) - len(groups)


LLMD_SCHEMA = ROOT / "tests" / "data" / "schemas" / "llm-d-modelservice-v0.4.12.values.schema.json"


@pytest.mark.integration
def test_llm_d_values_of_every_shipped_plan_validate_against_the_chart_s_schema(plans):
    """Issue 42: 0 of 66 llm-d values files validated against the chart's own values.schema.json (routing's
    inferencePool/httpRoute/epp left the chart at v0.3.0); each now does, against the schema vendored from chart
    v0.4.12, with real model artifacts (no placeholder Helm would leave unexpanded) sized from the weights."""
    import jsonschema

    schema = json.loads(LLMD_SCHEMA.read_text())
    checked = 0
    for name in sorted(p.stem for p in (ROOT / "scenarios").glob("*.yaml")):
        plan = plans(name)
        if "first_period_order" in plan:  # a build-out: its periods export as these plans' rows do
            continue
        for file, body in export_plan(plan, "llm-d").files.items():
            if not file.endswith(".values.yaml"):
                continue
            values = yaml.safe_load(body)
            jsonschema.validate(values, schema)
            artifacts = values["modelArtifacts"]
            assert "$" not in artifacts["uri"] and artifacts["size"] != "5Mi", (name, file)
            checked += 1
    assert checked >= 20


@pytest.mark.parametrize("target", list(TARGETS))
def test_every_file_names_its_engine_release_in_its_first_comment_line(target):
    """Interface, third round: `planner export` files name their engine version in their first comment line
    (`# engine: vllm 0.34.0`); a script's follows its shebang."""
    out = export_plan(one_row_plan(), target)
    release = TARGETS[target].release
    for name, body in out.files.items():
        if name.endswith((".sh", ".yaml")):
            comments = [line for line in body.splitlines() if line.startswith("#") and not line.startswith("#!")]
            assert comments[0] == f"# engine: {target} {release}", name


DYNAMO_SCHEMA = ROOT / "tests" / "data" / "schemas" / "dynamo-dynamographdeployment-v1beta1.openapi.yaml"


def strict_schema(node):
    """The CRD's schema as ``kubectl --validate=strict`` holds it: a field the schema does not name is an error (the
    API server would prune it without a word: a v1alpha1 field in a v1beta1 manifest vanishes)."""
    if isinstance(node, dict):
        if "properties" in node and "additionalProperties" not in node and not node.get(
                "x-kubernetes-preserve-unknown-fields"):
            node["additionalProperties"] = False
        for v in node.values():
            strict_schema(v)
    elif isinstance(node, list):
        for v in node:
            strict_schema(v)
    return node


@pytest.fixture(scope="module")
def dynamo_validator():
    import jsonschema

    return jsonschema.Draft4Validator(strict_schema(yaml.safe_load(DYNAMO_SCHEMA.read_text())))


@pytest.mark.integration
def test_dynamo_graphs_of_every_shipped_plan_validate_against_the_crd_s_schema(plans, dynamo_validator):
    """Issue 42: the graphs were v1alpha1, which Dynamo deprecated; each is now v1beta1 and validates, strictly,
    against the DynamoGraphDeployment CRD's own schema (vendored, tests/data/schemas/README.md)."""
    checked = 0
    for name in sorted(p.stem for p in (ROOT / "scenarios").glob("*.yaml")):
        for file, body in export_plan(plans(name), "dynamo").files.items():
            if file.endswith(".dynamo.yaml"):
                errors = [f"{'/'.join(map(str, e.path))}: {e.message[:200]}"
                          for e in dynamo_validator.iter_errors(yaml.safe_load(body))]
                assert not errors, (name, file, errors[:5])
                checked += 1
    assert checked >= 20


def test_the_strict_crd_schema_refuses_a_v1alpha1_component(dynamo_validator):
    """The check can fail: 0.7's fields inside a v1beta1 graph, and a type the CRD does not know."""
    out = export_plan(one_row_plan(), "dynamo")
    graph = yaml.safe_load(next(b for f, b in out.files.items() if f.endswith(".dynamo.yaml")))
    assert not list(dynamo_validator.iter_errors(graph))
    graph["spec"]["components"][1]["dynamoNamespace"] = "ns"
    assert list(dynamo_validator.iter_errors(graph))
    graph["spec"]["components"][1].pop("dynamoNamespace")
    graph["spec"]["components"][1]["type"] = "Prefill"
    assert list(dynamo_validator.iter_errors(graph))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_stored_whole_plan_exports_what_a_fresh_solve_does(plans, scenario):
    """tests/golden/plans holds each shipped scenario's whole plan for the engines' own parsers
    (tests/test_engines_accept.py), which cannot wait for a solve; it stands for the shipped plan only while each
    target launches the same commands from it as from a fresh solve (regenerate.py rewrites it)."""
    stored = json.loads((ROOT / "tests" / "golden" / "plans" / f"{scenario}.json").read_text())
    for target in TARGETS:
        fresh, kept = export_plan(plans(scenario), target), export_plan(stored, target)
        assert [(ln.row.index, ln.argv, ln.options) for ln in kept.launches] == \
            [(ln.row.index, ln.argv, ln.options) for ln in fresh.launches], (scenario, target)
        assert kept.skipped == fresh.skipped and sorted(kept.files) == sorted(fresh.files)
