"""The command line: interface keys, exit codes, and that it shows what the library computes."""

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from planner import catalog
from planner.perf.estimate import estimate
from planner.perf.frontier import frontier
from planner.cli import main


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_help_lists_commands():
    res = run("--help")
    assert res.exit_code == 0
    for cmd in ("estimate", "frontier", "catalog", "validate", "schema", "calibrate"):
        assert cmd in res.output


def test_help_does_not_import_heavy_packages():
    code = "import sys, planner.cli; print(any(m in sys.modules for m in ('numba', 'polars', 'ortools')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_estimate_json_has_interface_keys_and_matches_library():
    res = run("estimate", "--model", "llama-3.1-70b", "--hardware", "gb200-nvl72", "--batch", "32",
              "--chips", "8", "--precision", "fp8", "--format", "json")
    assert res.exit_code == 0, res.output
    got = json.loads(res.output)
    for key in ("tps_per_user", "output_tokens_per_s", "step_time_s", "ttft_s", "fits", "chips", "batch",
                "precision"):
        assert key in got
    lib = estimate("llama-3.1-70b", "gb200-nvl72", chips=8, batch=32, precision="fp8",
                               acceptance=0.7).to_dict()
    assert got == json.loads(json.dumps(lib))


def test_frontier_json_has_interface_keys_and_matches_library():
    res = run("frontier", "--model", "llama-3.1-8b", "--hardware", "hgx-h100", "--format", "json")
    assert res.exit_code == 0, res.output
    points = json.loads(res.output)
    assert points and all(p["hardware"] == "hgx-h100" for p in points)
    for key in ("hardware", "tps_per_user", "output_tokens_per_s_per_mw", "chips", "batch", "precision"):
        assert key in points[0]
    assert points == frontier("llama-3.1-8b", ["hgx-h100"])


def test_frontier_csv_and_table():
    res = run("frontier", "--model", "llama-3.1-8b", "--hardware", "cs3", "--format", "csv")
    assert res.exit_code == 0
    assert res.output.splitlines()[0].startswith("hardware,tps_per_user")
    res = run("frontier", "--model", "llama-3.1-8b", "--hardware", "cs3")
    assert res.exit_code == 0 and "best output tokens/s per MW" in res.output


@pytest.mark.parametrize("args, needle", [
    (["estimate", "--model", "llama-3.1-70", "--hardware", "vr-nvl72"], "did you mean 'llama-3.1-70b'"),
    (["estimate", "--model", "llama-3.1-70b", "--hardware", "vr-nvl27"], "did you mean 'vr-nvl72'"),
    (["estimate", "--model", "llama-3.1-70b", "--hardware", "hgx-h100", "--precision", "fp4"], "does not run fp4"),
    (["estimate", "--model", "llama-3.1-70b", "--hardware", "taalas-hc1"], "serves only"),
    (["estimate", "--model", "llama-3.1-70b", "--hardware", "vr-nvl72", "--batch", "0"], "batch"),
    (["estimate", "--model", "llama-3.1-70b", "--hardware", "vr-nvl72", "--chips", "97"], "chips"),
    (["catalog", "show", "vr-nvl7"], "did you mean"),
    (["estimate", "--model", "llama-3.1-8b", "--hardware", "vr-nvl72", "--acceptance", "nan"], "acceptance"),
    (["estimate", "--model", "llama-3.1-8b", "--hardware", "vr-nvl72", "--draft-tokens", "-3"], "draft-tokens"),
    (["frontier", "--model", "llama-3.1-8b", "--hardware", "vr-nvl72", "--input-tokens", "0"], "input-tokens"),
    (["solve", "scenarios/bank-2mw.yaml", "--time-limit", "nan"], "solver.time_limit_s"),
    (["solve", "scenarios/bank-2mw.yaml", "--time-limit", "-1"], "solver.time_limit_s"),
])
def test_bad_input_exits_2_with_a_message(args, needle):
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2, res.output
    assert needle in res.output
    assert "Traceback" not in res.output


def test_catalog_lists_every_system_and_model():
    res = run("catalog", "--format", "json")
    assert res.exit_code == 0
    data = json.loads(res.output)
    assert {r["id"] for r in data["hardware"]} == set(catalog.hardware_catalog())
    assert {r["id"] for r in data["models"]} == set(catalog.model_catalog())


def test_catalog_show_gives_sources():
    res = run("catalog", "show", "groq3-lpx", "--format", "json")
    assert res.exit_code == 0
    entry = json.loads(res.output)
    assert entry["id"] == "groq3-lpx" and entry["sources"]
    assert all("title" in s for s in entry["sources"].values())


def test_every_cited_source_exists():
    known = set(catalog.sources())
    from planner.report.catalog_view import _sources_of

    for hw in catalog.hardware_catalog().values():
        missing = _sources_of(hw.model_dump()) - known
        assert not missing, (hw.id, missing)


@pytest.mark.parametrize("hw_id", sorted(catalog.hardware_catalog()))
def test_estimate_answers_for_every_system(hw_id):
    """Every catalog system answers `estimate` for every model it may serve (or says clearly why not)."""
    hw = catalog.get_hardware(hw_id)
    for model_id in sorted(catalog.model_catalog()):
        args = ["estimate", "--model", model_id, "--hardware", hw_id, "--format", "json"]
        res = CliRunner().invoke(main, args)
        if hw.model_lock and hw.model_lock != model_id:
            assert res.exit_code == 2 and "serves only" in res.output
            continue
        if res.exit_code == 2:
            # Too large for any modelled layout of this system (e.g. a 1T MoE on 230 MB chips): said plainly.
            assert "does not fit any replica" in res.output, (model_id, res.output)
            assert catalog.get_model(model_id).total_params > 5e11, (model_id, res.output)
            continue
        assert res.exit_code == 0, (model_id, res.output)
        est = json.loads(res.output)
        assert est["fits"] and est["tps_per_user"] > 0 and est["ttft_s"] > 0
