"""Nothing from a plan or a scenario is ever run by an exported file (issue 42 item 3): a workload named
``chat$(touch PWNED1)`` landed in a double-quoted message of a script's guard, a model source holding ``$HOME$(...)``
was double-quoted because it held ``$UPPER``, TensorRT-LLM's options file was written through an unquoted heredoc,
and a newline in a name ended a comment line. Names that are not safe text are refused at export (exit 2); every
value is single-quoted besides, only the operator's own variables expand, and comments hold no control character.
Each generated script is run by bash with stand-in engines that record their arguments."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from planner.cli import main
from planner.errors import InputError
from planner.export import TARGETS, export_plan
from planner.export.common import Launch, shell_script, shell_word
from planner.export.trtllm import TARGET as TRTLLM
from planner.export.rows import PlanRows
from tests.test_export import one_row_plan, plans  # noqa: F401 - the module's fixture

HOSTILE = ["chat$(touch PWNED1)", "chat`touch PWNED2`", "chat\ntouch PWNED3", "chat'; touch PWNED4; '",
           'chat"$(touch PWNED5)"', "$HOME", "chat;touch PWNED6", "chat\u2028touch PWNED7"]
STAND_IN = """#!/bin/sh
for a in "$@"; do printf '%s\\0' "$a"; done > "$ARGV_OUT"
"""


@pytest.mark.parametrize("name", HOSTILE)
def test_a_name_that_is_not_safe_text_is_refused_by_every_target(name):
    plan = one_row_plan()
    plan["allocation"][0]["workload"] = name
    plan["inputs"]["demands"][0]["name"] = name
    for target in TARGETS:
        with pytest.raises(InputError) as err:
            export_plan(plan, target)
        assert err.value.field == "workload" and "launch file" in str(err.value), target


def test_the_cli_refuses_a_tampered_plan_with_exit_2_and_writes_nothing(tmp_path):
    plan = one_row_plan()
    plan["allocation"][0]["hardware"] = "gpu-x$(touch PWNED)"
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    out = CliRunner().invoke(main, ["export", str(path), "--to", "vllm", "--out", str(tmp_path / "out")])
    assert out.exit_code == 2 and "hardware" in out.output
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_a_model_source_that_is_not_a_hub_id_reaches_no_file():
    plan = one_row_plan()
    model = plan["inputs"]["models"]["llama-3.1-70b"]
    model["source"] = "https://huggingface.co/org/$HOME$(touch PWNED)"
    with pytest.raises(InputError, match="no Hugging Face source"):
        export_plan(plan, "vllm")


def run_script(tmp_path: Path, body: str, env: dict | None = None) -> list[str]:
    """The script run by bash in ``tmp_path`` with every engine program a stand-in that records its arguments."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for program in ("vllm", "python3", "python", "trtllm-serve", "sglang", "dynamo"):
        (bin_dir / program).write_text(STAND_IN)
        (bin_dir / program).chmod(0o755)
    script = tmp_path / "launch.sh"
    script.write_text(body)
    argv_out = tmp_path / "argv"
    run_env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path), "ARGV_OUT": str(argv_out), **(env or {})}
    done = subprocess.run(["bash", str(script)], cwd=tmp_path, env=run_env, capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0, done.stderr
    return argv_out.read_text().split("\0")[:-1]


def pwned(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in tmp_path.rglob("PWNED*"))


def test_a_hostile_value_past_the_checks_is_text_in_every_part_of_a_script(tmp_path):
    """Were a hostile value to pass the checks, the script still runs none of it: arguments, the guards'
    messages and the comments."""
    values = [v.replace("\n", " ") for v in HOSTILE] + ["a\\b", "--flag=$(touch PWNED8)"]
    launch = Launch(None, ["vllm", "serve", "$CHECKPOINT", "--served-model-name", *values],
                    needs={"CHECKPOINT": "a checkpoint for chat$(touch PWNED9) `touch PWNED10`\ntouch PWNED11"})
    body = shell_script(launch, [f"row for {v}" for v in HOSTILE])
    argv = run_script(tmp_path, body, {"CHECKPOINT": "/models/ckpt $(touch PWNED12)"})
    assert argv == ["serve", "/models/ckpt $(touch PWNED12)", "--served-model-name", *values]
    assert pwned(tmp_path) == []
    assert all(not line.startswith("touch") for line in body.split("\n"))  # bash ends a line at a newline alone


def test_an_unset_operator_value_stops_the_script_naming_it_and_runs_nothing(tmp_path):
    launch = Launch(None, ["vllm", "serve", "$DRAFT_MODEL"], needs={"DRAFT_MODEL": "a head for chat$(touch PWNED)"})
    script = tmp_path / "launch.sh"
    script.write_text(shell_script(launch, []))
    done = subprocess.run(["bash", str(script)], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 1 and "set DRAFT_MODEL to a head for chat$(touch PWNED)" in done.stderr
    assert pwned(tmp_path) == []


def test_only_the_operator_s_variables_expand():
    assert shell_word("$HOME") == "'$HOME'"
    assert shell_word("pvc://$CHECKPOINT/x", ["CHECKPOINT"]) == 'pvc://"${CHECKPOINT}"/x'  # safe text bare
    assert shell_word("$CHECKPOINT$(id)", ["CHECKPOINT"]) == "\"${CHECKPOINT}\"'$(id)'"
    assert shell_word("") == "''"


def test_trtllm_options_are_written_as_text_with_the_operator_s_values_in_place(tmp_path):
    """The options file came from an unquoted heredoc: anything in it expanded. Now the serializer's YAML goes
    through a quoted heredoc and the operator's values are put in by bash's substitution."""
    plan = one_row_plan(speculative="eagle", draft_tokens=3, precision="fp4")
    launch = export_plan(plan, "trtllm").launches[0]
    launch.options["served_model_name"] = "x$(touch PWNED1) `touch PWNED2`"
    launch.options["note"] = "PLANNER_OPTIONS_END\ntouch PWNED3"  # a line that is the heredoc's default end
    body = TRTLLM.script(PlanRows("p", None, None, []), launch)
    env = {"CHECKPOINT": "/ckpt/$(touch PWNED4)", "DRAFT_MODEL": "/draft/`touch PWNED5`"}
    argv = run_script(tmp_path, body, env)
    assert argv[0] == env["CHECKPOINT"] and pwned(tmp_path) == []
    options = yaml.safe_load((tmp_path / argv[argv.index("--extra_llm_api_options") + 1]).read_text())
    assert options["served_model_name"] == "x$(touch PWNED1) `touch PWNED2`"
    assert options["note"] == "PLANNER_OPTIONS_END\ntouch PWNED3"
    assert options["speculative_config"]["speculative_model_dir"] == env["DRAFT_MODEL"]


@pytest.mark.integration
@pytest.mark.skipif(os.name != "posix", reason="bash")
def test_every_script_of_a_shipped_plan_runs_with_stand_ins(plans, tmp_path):  # noqa: F811 - the fixture
    """Every exported script of a shipped plan runs to its engine's command with the operator's values set."""
    from planner.export.common import ScriptTarget

    for target, spec in TARGETS.items():
        if not isinstance(spec, ScriptTarget):
            continue
        out = export_plan(plans("gtc-2026-tiers"), target)
        for launch in out.launches:
            env = {var: {"NODE_RANK": "1"}.get(var, f"/supplied/{var.lower()}") for var in launch.needs}
            argv = run_script(tmp_path, out.files[spec.file_for(launch.row)], env)
            assert argv and pwned(tmp_path) == []


@pytest.mark.parametrize("target", ["vllm", "sglang", "trtllm"])
def test_each_copy_of_a_script_serves_on_its_own_port(tmp_path, target):
    """Issue 42: every script launched one replica with no port, so a second copy on one host collided with the
    first; each now serves on $PORT, 8000 unless set."""
    out = export_plan(one_row_plan(), target)
    body = next(b for name, b in out.files.items() if name.endswith(".sh"))
    supplied = {var: f"/supplied/{var.lower()}" for var in out.launches[0].needs}
    first = run_script(tmp_path, body, supplied)
    second = run_script(tmp_path, body, {**supplied, "PORT": "8001"})
    assert first[first.index("--port") + 1] == "8000" and second[second.index("--port") + 1] == "8001"


@pytest.mark.parametrize("target", ["vllm", "sglang"])
def test_a_router_takes_the_operator_s_urls_as_text(tmp_path, target):
    """The routers split the operator's URL lists into words (read -a) and never evaluate them: a `$(...)`, a
    backtick or a glob in a URL reaches the router as text, and nothing runs."""
    plan = one_row_plan(role="prefill")
    plan["allocation"].append(one_row_plan(role="decode")["allocation"][0])
    out = export_plan(plan, target)
    body = out.files["router-w.sh"]
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "vllm-router").write_text(STAND_IN)
    (tmp_path / "bin" / "vllm-router").chmod(0o755)
    env = {"PREFILL_URLS": "http://p:8000$(touch${IFS}PWNED1) http://q:8001,9001", "DECODE_URLS": "`touch PWNED2` *"}
    argv = run_script(tmp_path, body, env)
    assert "http://p:8000$(touch${IFS}PWNED1)" in argv and "`touch" in argv and "*" in argv
    assert pwned(tmp_path) == []
    if target == "sglang":  # URL,BOOTSTRAP_PORT: the port after the URL; a bare URL: the default 8998
        k = argv.index("http://q:8001")
        assert argv[k + 1] == "9001" and argv[argv.index("http://p:8000$(touch${IFS}PWNED1)") + 1] == "8998"


def test_two_exports_into_one_folder_take_turns_and_each_manifest_describes_its_files(tmp_path):
    """Issue 43: two `export --out` into one folder at once (no lock) left a manifest describing the other
    engine's files. write_export holds the folder's lock while it writes, manifest.json last."""
    import threading
    import time

    from planner.export import write_export
    from planner.writing import folder_locked

    out = tmp_path / "out"
    out.mkdir()
    vllm, sglang = export_plan(one_row_plan(), "vllm"), export_plan(one_row_plan(), "sglang")
    done = []
    with folder_locked(out):  # another writer holds the folder
        worker = threading.Thread(target=lambda: done.append(write_export(vllm, out)))
        worker.start()
        time.sleep(0.5)
        assert not done and not (out / "manifest.json").exists()  # it waits for its turn
    worker.join(10)
    assert done and json.loads((out / "manifest.json").read_text())["target"] == "vllm"
    write_export(sglang, out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["target"] == "sglang" and all((out / r["file"]).exists() for r in manifest["exported"])


def test_export_refuses_a_folder_in_the_way_that_is_not_a_regular_file(tmp_path):
    from planner.export import write_export

    out = export_plan(one_row_plan(), "vllm")
    (tmp_path / "manifest.json").mkdir()
    with pytest.raises(InputError, match="not a regular file"):
        write_export(out, tmp_path)
    assert not any(p.suffix == ".sh" for p in tmp_path.iterdir())  # nothing written before the refusal
