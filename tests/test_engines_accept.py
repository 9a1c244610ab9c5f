"""Issue 42 item 4: every exported command of every shipped plan (tests/golden/plans) and of a set of hand-built
rows covering each setting the export writes is judged by the engine's own definitions, at the version the file
names: vLLM's ``vllm serve`` parser and checks (the vllm and llm-d targets' arguments) and vllm-router's (the
routers), Dynamo's worker parser with the vLLM its release pins, SGLang's ``ServerArgs``. The engines live in their own environments (``make engines``:
tests/engines/install.py); where one is not installed its test is skipped, saying so. ``.ci/run`` installs them
while the suite runs, and each test waits for its engine.
Known-bad commands go through the same check, so that a check which passes everything fails here."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.engines import install
from tests.engines.cases import all_cases

pytestmark = pytest.mark.integration

HERE = Path(__file__).resolve().parent / "engines"
# engine -> (its checker, the targets whose commands it judges)
JUDGES = {"vllm": ("parse_vllm.py", ("vllm", "llm-d")), "sglang": ("parse_sglang.py", ("sglang",)),
          "dynamo": ("parse_dynamo.py", ("dynamo",))}
# Commands each engine must refuse: a misspelt flag, a method 0.34 deprecated, a router with no decode side
REFUSED = {
    "vllm": [["vllm", "serve", "org/m", "--tensor-parallel-sise", "2"],
             ["vllm", "serve", "org/m", "--speculative-config",
              '{"method": "deepseek_mtp", "num_speculative_tokens": 1}'],
             ["vllm", "serve", "org/m", "--speculative-config", '{"method": "mtp", "num_draft": 1}'],
             ["vllm-router", "--vllm-pd-disaggregation", "--prefill", "http://p:8000", "--port", "8000"]],
    "dynamo": [["python3", "-m", "dynamo.vllm", "--model", "org/m", "--is-decode-worker"],
               ["python3", "-m", "dynamo.vllm", "--model", "org/m", "--disaggregation-mode", "prefill"]],
    "sglang": [["python", "-m", "sglang.launch_server", "--model-path", "org/m", "--tp-sise", "2"],
               ["python", "-m", "sglang.launch_server", "--model-path", "org/m", "--prefill-round-robin-balance"]],
}


@pytest.fixture(scope="module")
def cases() -> list[dict]:
    return all_cases()


def judged(engine: str, cases: list[dict]) -> dict[str, dict]:
    """Each case's verdict by the engine's own checker, run in the engine's environment (waited for where .ci/run
    installs it beside the suite: install.wait_for)."""
    install.wait_for(engine)
    python = install.python_of(engine)
    if python is None:
        missing = f"{engine} {install.versions()[engine]} is not installed here (make engines installs it)"
        if os.environ.get("CI"):  # .ci/run installs them: a CI run that skipped the check would hide its finding
            pytest.fail(missing)
        pytest.skip(missing)
    script, _ = JUDGES[engine]
    done = subprocess.run([str(python), str(HERE / script)], input=json.dumps(cases), capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    head, verdicts = lines[0], lines[1:]
    assert head["version"] == install.versions()[engine], head
    return {v["case"]: v for v in verdicts}


@pytest.mark.parametrize("engine", list(JUDGES))
def test_every_exported_command_is_accepted_by_the_engine_s_own_parser(cases, engine):
    mine = [c for c in cases if c["target"] in JUDGES[engine][1]]
    bad = [{"case": f"refused {k}", "argv": argv} for k, argv in enumerate(REFUSED[engine])]
    verdicts = judged(engine, mine + bad)
    assert len(verdicts) == len(mine) + len(bad)
    for b in bad:
        assert not verdicts[b["case"]]["ok"], f"{engine} accepted {b['argv']}"
    rejected = {c["case"]: verdicts[c["case"]]["error"] for c in mine if not verdicts[c["case"]]["ok"]}
    assert not rejected, json.dumps(rejected, indent=1)[:6000]


def test_the_cases_cover_every_target_every_shipped_plan_and_the_routers(cases):
    targets = {c["target"] for c in cases}
    assert targets == {"vllm", "sglang", "trtllm", "dynamo", "llm-d"}
    plans = {c["case"].split(":")[0] for c in cases}
    assert {p.stem for p in (Path(__file__).parent / "golden" / "plans").glob("*.json")} <= plans
    assert any("router-" in c["case"] for c in cases if c["target"] == "vllm")
