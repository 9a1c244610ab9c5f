"""Input files are refused before they are read when they cannot be a scenario or a plan (issue 11, item 5)."""

from __future__ import annotations

import os
import time

import pytest
from click.testing import CliRunner

from planner.cli import main


@pytest.mark.parametrize("command", ["validate", "check"])
def test_devices_pipes_huge_and_long_paths_exit_2_at_once(tmp_path, command):
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    sparse = tmp_path / "sparse.yaml"
    with open(sparse, "wb") as fh:
        fh.truncate(6 * 2**30)  # 6 GB of holes: nothing may read it
    for path, message in (("/dev/zero", "not a regular file"), (str(fifo), "not a regular file"),
                          (str(sparse), "larger than"), (str(tmp_path / ("a" * 300 + ".yaml")), "cannot be read"),
                          (str(tmp_path), "is a directory"), (str(tmp_path / "missing.yaml"), "no such file")):
        res = CliRunner().invoke(main, [command, path])  # refused before reading: the message names why
        assert res.exit_code == 2, (path, res.output)
        assert message in res.output and "Traceback" not in res.output, (path, res.output)


@pytest.mark.parametrize("text,message", [
    ('name: x\ndescription: "a\x01b"\n', "YAML syntax error"),
    ("name: x\nstart_date: !!timestamp soon\n", "start_date: expected a valid date"),
    ("name: x\nhorizon_years: !!bool maybe\n", "horizon_years"),
    ("name: x\nhorizon_years: !!int many\n", "horizon_years"),
    ("name: x\nhorizon_years: !!float lots\n", "horizon_years"),
])
def test_odd_yaml_tags_and_characters_are_input_errors(tmp_path, text, message):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    res = CliRunner().invoke(main, ["validate", str(path)])
    assert res.exit_code == 2 and message in res.output and "Traceback" not in res.output, res.output


def test_ctrl_c_exits_130_with_one_line():
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "planner.cli", "frontier", "-m", "kimi-k2", "--format", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(1.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    if proc.returncode == 0:
        pytest.skip("the command finished before the interrupt")
    assert proc.returncode == 130, err.decode()
    assert err.decode().strip() == "error: interrupted" and out == b""


def test_output_paths_are_refused_before_the_work(tmp_path):
    from pathlib import Path

    scenario = tmp_path / "s.yaml"
    scenario.write_text((Path(__file__).parents[1] / "scenarios" / "bank-2mw.yaml").read_text())
    before = scenario.read_bytes()
    for args, message in (
        (["solve", str(scenario), "--html", str(scenario)], "input of this command"),
        (["solve", str(scenario), "--html", str(tmp_path / "missing" / "r.html")], "does not exist"),
        (["solve", str(scenario), "--out", str(scenario / "x")], "is a file, not a directory"),
        (["solve", str(scenario), "--out", str(scenario)], "is a file"),  # click says so itself
        (["frontier", "-m", "llama-3.1-8b", "-H", "hgx-h200", "--png", "/dev/null"], "not a regular file"),
        (["frontier", "-m", "llama-3.1-8b", "-H", "hgx-h200", "--svg", str(tmp_path)], "is a directory"),
    ):
        res = CliRunner().invoke(main, args)
        assert res.exit_code == 2 and message in res.output and "Traceback" not in res.output, (args, res.output)
    assert scenario.read_bytes() == before and os.path.exists("/dev/null")


@pytest.mark.parametrize("kwargs", [{"batch": 1.5}, {"batch": True}, {"chips": 2.5}, {"batch": 0}])
def test_library_estimate_validates_like_the_cli(kwargs):
    from planner.errors import InputError
    from planner.perf.estimate import estimate

    with pytest.raises(InputError):
        estimate("llama-3.1-8b", "hgx-h200", **kwargs)


@pytest.mark.parametrize("limit", [-1, float("nan"), 1e300, "5", 0])
def test_library_solve_validates_its_time_limit(limit):
    from pathlib import Path

    from planner.errors import InputError
    from planner.fleet.solve import solve
    from planner.scenario import load_scenario

    sc = load_scenario(Path(__file__).parents[1] / "scenarios" / "bank-2mw.yaml")
    with pytest.raises(InputError, match="time_limit_s"):
        solve(sc, time_limit_s=limit)


@pytest.mark.parametrize("mutate,message", [
    (lambda h: h.update(family="nvidia-gpo"), "unknown efficiency family 'nvidia-gpo' (did you mean 'nvidia-gpu'?)"),
    (lambda h: h["chip"].update(memory=h["chip"]["memory"] * 5), "at most 4"),
    (lambda h: h.update(id="vr-nvl72+groq3-lpx"), "expected an id of lower-case letters"),
    (lambda h: h.update(id="../../x"), "expected an id of lower-case letters"),
])
def test_custom_hardware_is_checked_in_validation_not_in_solve(tmp_path, mutate, message):
    """What solve would refuse, validate refuses first, with the field's line (issue 11, item 8)."""
    import copy
    from pathlib import Path

    import yaml

    root = Path(__file__).parents[1]
    hw = yaml.safe_load((root / "planner" / "data" / "hardware" / "hgx-h200.yaml").read_text())
    hw["id"] = "my-rack"
    mutate(hw)
    sc = yaml.safe_load((root / "scenarios" / "bank-2mw.yaml").read_text())
    sc["hardware"] = {"custom": [copy.deepcopy(hw)]}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(sc, sort_keys=False))
    res = CliRunner().invoke(main, ["validate", str(path)])
    assert res.exit_code == 2 and message in res.output and "hardware.custom[0]" in res.output, res.output


def test_csv_cells_cannot_run_as_spreadsheet_formulas(tmp_path):
    """A workload named like a formula is quoted in CSV, kept as it is in Parquet and JSON (issue 11, item 13)."""
    import json as _json
    from pathlib import Path

    import polars as pl

    text = (Path(__file__).parents[1] / "scenarios" / "bank-2mw.yaml").read_text()
    first = next(line for line in text.splitlines() if line.strip().startswith("- name:"))
    name = first.split("name:")[1].split("#")[0].strip()
    path = tmp_path / "s.yaml"
    path.write_text(text.replace(f"name: {name}", 'name: "=HYPERLINK(1)"', 1))
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["solve", str(path), "--out", str(out), "-q"])
    assert res.exit_code == 0, res.output
    csv = (out / "workloads.csv").read_text()
    assert "'=HYPERLINK(1)" in csv and "\n=HYPERLINK" not in csv
    assert "=HYPERLINK(1)" in pl.read_parquet(out / "workloads.parquet")["workload"].to_list()
    assert any(w["workload"] == "=HYPERLINK(1)" for w in _json.loads((out / "plan.json").read_text())["workloads"])


def test_a_demand_beyond_what_the_milp_resolves_is_refused_not_called_infeasible(tmp_path):
    """3e11 requests/s with no limits used to end in a false 'no combination covers the demand' (issue 11, item 9):
    its rows' coefficients fell under the solvers' tolerances."""
    path = tmp_path / "huge.yaml"
    path.write_text("""
name: huge
start_date: 2027-01-01
horizon_years: 4
finance: {wacc: 0.08, electricity_usd_per_mwh: 70, pue: 1.25}
hardware: {allow: [hgx-h200]}
workloads:
  - {name: chat, model: llama-3.1-8b, requests_per_s: 3.0e+11, input_tokens: 1000, output_tokens: 300,
     tier: standard, ttft_s: 1.0}
""")
    res = CliRunner().invoke(main, ["solve", str(path), "-q"])
    assert res.exit_code == 2 and "workloads.chat.requests_per_s" in res.output and "replicas" in res.output


def test_absurd_model_sizes_are_input_errors(tmp_path):
    """A 100,000-layer inline model took a minute and 740 MB under --time-limit 2 (issue 11, item 10)."""
    from pathlib import Path

    import yaml

    root = Path(__file__).parents[1]
    model = yaml.safe_load((root / "planner" / "data" / "models" / "llama-3.1-8b.yaml").read_text())
    model.update(id="deep", layers=100_000)
    sc = yaml.safe_load((root / "scenarios" / "bank-2mw.yaml").read_text())
    sc["models"] = [model]
    sc["workloads"][0]["model"] = "deep"
    path = tmp_path / "deep.yaml"
    path.write_text(yaml.safe_dump(sc, sort_keys=False))
    res = CliRunner().invoke(main, ["solve", str(path), "--time-limit", "2"])
    assert res.exit_code == 2 and "models[0].layers" in res.output, res.output


def test_the_time_limit_covers_the_engine(tmp_path):
    from pathlib import Path

    res = CliRunner().invoke(main, ["solve", str(Path(__file__).parents[1] / "scenarios" / "mixed-site.yaml"),
                                    "--time-limit", "0.05", "-q"])
    assert res.exit_code == 1 and "time limit" in res.output and "Traceback" not in res.output, res.output


def test_out_writes_only_its_own_files_in_place(tmp_path):
    """--out into the scenario's own directory: the input (and its hard link), a symlink, a FIFO and the
    directory's mode are left as they are; only the plan's files change, and no temporary is left (item 6)."""
    from pathlib import Path

    out = tmp_path / "site"
    out.mkdir()
    out.chmod(0o2775)
    scenario = out / "s.yaml"
    scenario.write_text((Path(__file__).parents[1] / "scenarios" / "bank-2mw.yaml").read_text())
    os.link(scenario, tmp_path / "hardlink.yaml")
    (out / "link").symlink_to("nowhere")
    os.mkfifo(out / "pipe")
    inode = scenario.stat().st_ino
    for _ in range(2):
        res = CliRunner().invoke(main, ["solve", str(scenario), "--out", str(out), "-q"])
        assert res.exit_code == 0, res.output
    assert scenario.stat().st_ino == inode and (tmp_path / "hardlink.yaml").read_text() == scenario.read_text()
    assert (out / "link").is_symlink() and os.readlink(out / "link") == "nowhere"
    assert (out / "pipe").exists() and not (out / "pipe").is_file()
    assert (out.stat().st_mode & 0o7777) == 0o2775
    names = {p.name for p in out.iterdir()}
    assert {"plan.json", "fleet.csv", "fleet.parquet"} <= names
    assert not [n for n in names if n.startswith(".tmp-")]


def test_concurrent_writers_take_turns(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    scenario = Path(__file__).parents[1] / "scenarios" / "bank-2mw.yaml"
    out = tmp_path / "out"
    procs = [subprocess.Popen([sys.executable, "-m", "planner.cli", "solve", str(scenario), "--out", str(out), "-q",
                               "--format", "json"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
             for _ in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()
    import json as _json

    assert _json.loads((out / "plan.json").read_text())["status"] == "optimal"


@pytest.mark.parametrize("edit,message", [
    (("turns", "turns: 3"), "give kind: agentic"),
    (("allow_hardware", "allow_hardware: []"), "an empty list allows no hardware"),
])
def test_chat_with_turns_and_an_empty_allow_list_are_errors(tmp_path, edit, message):
    """Item 13: turns changed a chat workload's cost, and [] meant "any"."""
    path = tmp_path / "s.yaml"
    path.write_text(f"""
name: s
start_date: 2027-01-01
horizon_years: 4
finance: {{wacc: 0.08, electricity_usd_per_mwh: 70, pue: 1.25}}
workloads:
  - name: chat
    model: llama-3.1-8b
    requests_per_s: 5
    input_tokens: 1000
    output_tokens: 300
    tier: standard
    {edit[1]}
""")
    res = CliRunner().invoke(main, ["validate", str(path)])
    assert res.exit_code == 2 and message in res.output, res.output


def test_catalog_csv_is_one_table():
    import csv
    import io

    for args, first in ((["catalog", "--format", "csv"], "corsair-rack"),
                        (["catalog", "--format", "csv", "--table", "models"], "deepseek-r1")):
        res = CliRunner().invoke(main, args)
        rows = list(csv.reader(io.StringIO(res.stdout)))
        assert res.exit_code == 0 and rows[1][0] == first and len({len(r) for r in rows}) == 1


def test_estimate_default_serves_from_the_fastest_tier_a_domain_can_hold():
    """A Corsair rack serves a 70B model from SRAM (23 cards), not one card reading LPDDR at 400 GB/s; where no
    64-card domain holds the model in SRAM (DeepSeek-R1), the smallest replica that fits is the default."""
    from planner.perf.estimate import estimate

    dense = estimate("llama-3.1-70b", "corsair-rack")
    assert dense.chips <= 64 and dense.memory["weight_bytes_per_chip"] + dense.memory["kv_bytes_per_chip"] <= 2.0e9
    assert dense.tps_per_user > 10 * estimate("llama-3.1-70b", "corsair-rack", chips=1).tps_per_user
    moe = estimate("deepseek-r1", "corsair-rack")
    assert moe.chips < 8 and moe.fits
    assert estimate("llama-3.1-70b", "hgx-h100").chips == 1  # one serving tier: the smallest that fits


def test_ctrl_c_stops_a_running_milp(tmp_path):
    """Ctrl-C while SCIP solves (the shipped build-out asked for a zero gap keeps it busy past a minute) stops the
    run at once: exit 130, the one line, nothing written under --out."""
    import signal
    import subprocess
    import sys
    from pathlib import Path

    text = (Path(__file__).parents[1] / "scenarios" / "buildout-2027-2030.yaml").read_text()
    text = text.replace("time_limit_s: 120, relative_gap: 0.001", "time_limit_s: 300, relative_gap: 0.0")
    assert "time_limit_s: 300, relative_gap: 0.0" in text
    scenario = tmp_path / "hard.yaml"
    scenario.write_text(text)
    out_dir = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "planner.cli", "solve", str(scenario), "--out", str(out_dir),
                             "--format", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(12.0)  # scenario, engine (a few seconds) and into the MILP
    if proc.poll() is not None:
        pytest.skip("the solve finished before the interrupt")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)  # a solver left running would take its 300 s: a hang guard, not a timing
    assert proc.returncode == 130, err.decode()[-2000:]
    assert err.decode().strip().splitlines()[-1] == "error: interrupted" and out == b""
    assert not out_dir.exists() or not any(p.name != ".planner.lock" for p in out_dir.iterdir())


def test_an_interrupted_command_ends_at_once_whatever_threads_run(monkeypatch):
    """Ctrl-C while a solver's worker thread runs (the build-out's comparisons side by side): the interpreter's
    finalization could unwind that thread inside SCIP's C++ core and abort (exit -6, "terminate called without an
    active exception"), so the command ends at once with its code (os._exit), never through sys.exit."""
    import threading

    from planner import interrupts

    ended = []
    monkeypatch.setattr(interrupts.os, "_exit", lambda code: ended.append(code) or (_ for _ in ()).throw(SystemExit))
    release = threading.Event()
    worker = threading.Thread(target=release.wait, name="planner-comparison", daemon=True)
    worker.start()
    try:
        for _ in range(2):  # with a worker thread running, and without
            with pytest.raises(SystemExit):
                interrupts.stop(130)
            release.set()
            worker.join()
        assert ended == [130, 130]
    finally:
        release.set()


@pytest.mark.parametrize("swallow", ["except", "ctypes"])
def test_an_interrupt_swallowed_on_the_way_still_stops_the_command(tmp_path, swallow):
    """An interrupt lost inside a C callback (numba's compiler calling llvmlite through ctypes) or caught by code
    that should not have: the watchdog of planner/interrupts.py ends the process, exit 130, the one line, and no
    "Exception ignored" traceback."""
    import subprocess
    import sys
    from pathlib import Path

    lose = {
        "except": "try:\n    os.kill(os.getpid(), signal.SIGINT)\n    time.sleep(1)\nexcept KeyboardInterrupt:\n    pass\n",
        "ctypes": ("import ctypes\ncb = ctypes.CFUNCTYPE(None)(lambda: os.kill(os.getpid(), signal.SIGINT) or "
                   "time.sleep(1))\ncb()\n"),
    }[swallow]
    script = tmp_path / "probe.py"
    script.write_text("import os, signal, time\nfrom planner import interrupts\ninterrupts.install()\n" + lose
                      + "time.sleep(30)\nprint('ran to the end')\n")
    env = {**__import__("os").environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 130 and out.stdout == "", out  # stopped: the script's last line never ran
    assert out.stderr.strip() == "error: interrupted", out.stderr


@pytest.fixture(scope="module")
def two_plans():
    from pathlib import Path

    from planner.fleet.solve import solve
    from planner.scenario import load_scenario

    root = Path(__file__).parents[1] / "scenarios"
    return solve(load_scenario(root / "bank-2mw.yaml")), solve(load_scenario(root / "gtc-2026-tiers.yaml"))


def _whole(out_dir, old: dict, new: dict) -> None:
    """Every file the writer owns is whole: byte for byte the old plan's or the new plan's; no temporary left."""
    names = {p.name for p in out_dir.iterdir()} - {".planner.lock"}
    assert not [n for n in names if n.startswith(".tmp-")], names
    for name in names:
        data = (out_dir / name).read_bytes()
        assert data in (old.get(name), new.get(name)), name


def test_out_interrupted_at_every_step_leaves_every_file_whole(tmp_path, two_plans, monkeypatch):
    """Fault injection into --out's writer: an interrupt at each write and at each rename, over a directory that
    holds the previous plan. Whatever step it hits, each file is the old one or the new one, whole, and no
    temporary file is left."""
    import os

    from planner.report import files

    old_plan, new_plan = two_plans
    old, new = files.plan_file_contents(old_plan), files.plan_file_contents(new_plan)
    steps = 2 * len(new)  # each file: its write, then its rename
    real_replace, real_fdopen = os.replace, os.fdopen
    for step in range(steps):
        out = tmp_path / f"out{step}"
        files.write_files(old_plan, out)
        count = {"n": 0}

        def tick():
            count["n"] += 1
            if count["n"] == step + 1:
                raise KeyboardInterrupt

        def replace(a, b):
            tick()
            return real_replace(a, b)

        def fdopen(fd, *args, **kw):
            tick()
            return real_fdopen(fd, *args, **kw)

        monkeypatch.setattr(files.os, "replace", replace)
        monkeypatch.setattr(files.os, "fdopen", fdopen)
        with pytest.raises(KeyboardInterrupt):
            files.write_files(new_plan, out)
        monkeypatch.undo()
        _whole(out, old, new)
        assert (out / "plan.json").read_bytes() == old["plan.json"]  # plan.json goes last: still the old plan's
    files.write_files(new_plan, tmp_path / "clean")
    _whole(tmp_path / "clean", {}, new)


def test_out_killed_mid_write_never_leaves_a_partial_file(tmp_path, two_plans):
    """SIGKILL at a spread of moments while a child process rewrites --out: every file under its own name is the
    old plan's or the new one's, whole (a temporary .tmp- file may stay behind: nothing ran to remove it)."""
    import signal
    import subprocess
    import sys
    from pathlib import Path

    from planner.report import files

    old_plan, new_plan = two_plans
    old, new = files.plan_file_contents(old_plan), files.plan_file_contents(new_plan)
    blob = tmp_path / "new.pickle"
    import pickle

    blob.write_bytes(pickle.dumps(new))
    script = tmp_path / "writer.py"
    script.write_text("import pickle, sys\nfrom pathlib import Path\nfrom planner.report.files import atomic_write\n"
                      "new = pickle.loads(Path(sys.argv[1]).read_bytes())\nprint('ready', flush=True)\n"
                      "for _ in range(200):\n    for name, data in new.items():\n"
                      "        atomic_write(Path(sys.argv[2]) / name, data)\n")
    env = {**__import__("os").environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    for i, delay in enumerate((0.0, 0.01, 0.03, 0.07, 0.15, 0.3)):
        out = tmp_path / f"kill{i}"
        files.write_files(old_plan, out)
        proc = subprocess.Popen([sys.executable, str(script), str(blob), str(out)], stdout=subprocess.PIPE, env=env)
        assert proc.stdout.readline().strip() == b"ready"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        for p in out.iterdir():
            if p.name.startswith(".tmp-") or p.name == ".planner.lock":
                continue
            assert p.read_bytes() in (old[p.name], new[p.name]), p.name


def _validate_doc(tmp_path, doc, name="s.yaml"):
    import yaml

    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc, sort_keys=False))
    return CliRunner().invoke(main, ["validate", str(path)])


def test_custom_figures_take_numbers_only(tmp_path):
    """A custom rack's figure value of true or "700" was read as 1 or 700; now it is refused like a scenario
    number, naming the field."""
    from tests.test_fuzz import custom_base

    for value in (True, "700"):
        doc = custom_base()
        doc["hardware"]["custom"][0]["chip"]["power_w"] = {"value": value, "source": "x", "confidence": "estimate",
                                                         "basis": "y"}
        res = _validate_doc(tmp_path, doc)
        assert res.exit_code == 2 and "chip.power_w.value: expected a valid number" in res.output, res.output


def test_keys_that_are_not_text_are_named_at_their_line(tmp_path):
    """`~:` (null), a date and a number as keys were reported at line 1 as pydantic's 'Keys should be strings'."""
    from pathlib import Path

    text = (Path(__file__).parents[1] / "scenarios" / "bank-2mw.yaml").read_text()
    lines = text.count("\n")
    for key, kind in (("~", "null"), ("2026-01-01", "date"), ("5", "int")):
        res = _validate_doc(tmp_path, text + f"{key}: 3\n")
        assert res.exit_code == 2, res.output
        assert f":{lines + 1}: key '{key}' is read as " in res.output and kind in res.output, res.output
    res = _validate_doc(tmp_path, "name: x\nsite:\n  5: 3\n")
    assert ":3: site: key '5'" in res.output


def test_a_model_locked_system_says_so_when_nothing_fits(tmp_path):
    import yaml
    from pathlib import Path

    doc = yaml.safe_load((Path(__file__).parents[1] / "scenarios" / "bank-2mw.yaml").read_text())
    doc["start_date"] = "2027-01-01"
    doc["hardware"] = {"allow": ["taalas-hc1"]}
    path = tmp_path / "locked.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    res = CliRunner().invoke(main, ["solve", str(path)])
    assert res.exit_code == 3 and "taalas-hc1 serves only llama-3.1-8b" in res.output, res.output


def test_frontier_of_an_empty_hardware_list_is_a_clear_error():
    from planner.errors import InputError
    from planner.perf.frontier import frontier

    with pytest.raises(InputError, match="empty list of hardware"):
        frontier("llama-3.1-8b", [])
    assert frontier("llama-3.1-8b", "hgx-h200")  # one id as a string is that id, not its characters
