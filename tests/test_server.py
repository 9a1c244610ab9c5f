"""``planner serve`` (planner/server.py, planner/client.py): a command run in the warm server prints, writes and exits
exactly as it does in its own process; Ctrl-C reaches it; a caller of other startup settings, or a server of other
code, runs the command itself; one server per checkout; --status and --stop say what they did."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from planner import client, server

ROOT = Path(__file__).resolve().parent.parent
PLANNER = [sys.executable, "-m", "planner.cli"]
MELANGE = str(ROOT / "benchmarks" / "data" / "melange-peer.yaml")


def environment(folder: str, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k != client.SKIP_ENV}
    return dict(env, PLANNER_SERVER_DIR=folder, **extra)


def planner(args, env, cwd=ROOT, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(PLANNER + list(args), env=env, cwd=cwd, capture_output=True, text=True, timeout=300, **kw)


def commands_run(env) -> int:
    out = planner(["serve", "--status"], env)
    assert out.returncode == 0, out.stderr
    return int(out.stdout.split(" command(s)")[0].rsplit(" ", 1)[1])


@pytest.fixture(scope="module")
def served():
    """A server of this checkout in a folder of its own (AF_UNIX paths are short: not under pytest's tmp)."""
    folder = tempfile.mkdtemp(prefix="ps", dir="/tmp")
    env = environment(folder)
    proc = subprocess.Popen(PLANNER + ["serve", "--idle-minutes", "10"], env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 600
    while planner(["serve", "--status"], env).returncode != 0:
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.2)
    yield env, proc
    planner(["serve", "--stop"], env)
    try:
        proc.wait(timeout=30)
    finally:
        proc.kill()
        shutil.rmtree(folder, ignore_errors=True)


def test_a_command_in_the_server_prints_and_exits_as_in_its_own_process(served):
    env, _ = served
    alone = planner(["solve", "melange-peer.yaml", "--no-verify", "--format", "json"], dict(env, PLANNER_NO_SERVER="1"),
                    cwd=ROOT / "benchmarks" / "data")
    before = commands_run(env)
    warm = planner(["solve", "melange-peer.yaml", "--no-verify", "--format", "json"], env, cwd=ROOT / "benchmarks" / "data")
    assert commands_run(env) == before + 1  # it ran in the server, from the caller's directory
    assert (warm.returncode, warm.stdout, warm.stderr) == (alone.returncode, alone.stdout, alone.stderr)
    assert '"status"' in warm.stdout


def test_errors_exit_codes_and_files_pass_through(served, tmp_path):
    env, _ = served
    for args in (["solve", "no-such-scenario.yaml"], ["estimate", "-m", "no-such-model", "--hardware", "hgx-h100"],
                 ["solve", MELANGE, "--time-limit", "-1"]):
        alone = planner(args, dict(env, PLANNER_NO_SERVER="1"))
        warm = planner(args, env)
        assert warm.returncode == alone.returncode != 0
        assert warm.stderr == alone.stderr and warm.stderr.startswith("error:")
    out = tmp_path / "plan"
    warm = planner(["solve", MELANGE, "--no-verify", "--out", str(out), "--quiet"], env)
    assert warm.returncode == 0, warm.stderr
    assert (out / "plan.json").is_file()


def test_standard_input_and_the_environment_are_the_callers(served, tmp_path):
    env, _ = served
    before = commands_run(env)
    warm = planner(["validate", "-"], dict(env, COLUMNS="200"), input=Path(MELANGE).read_text())
    alone = planner(["validate", "-"], dict(env, COLUMNS="200", PLANNER_NO_SERVER="1"),
                    input=Path(MELANGE).read_text())
    assert commands_run(env) == before + 1
    assert (warm.returncode, warm.stdout, warm.stderr) == (alone.returncode, alone.stdout, alone.stderr)


def long_solve_in_the_server(env) -> subprocess.Popen:
    """The build-out's solve (seconds long), once the server has taken it and it has run a second."""
    before = commands_run(env)
    running = subprocess.Popen(PLANNER + ["solve", str(ROOT / "scenarios" / "buildout-2027-2030.yaml")], env=env,
                               cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while commands_run(env) == before:  # handed to the server
        assert time.monotonic() < deadline and running.poll() is None
        time.sleep(0.1)
    time.sleep(1.0)
    return running


def test_ctrl_c_reaches_the_command_and_the_server_lives_on(served):
    env, proc = served
    before = commands_run(env)
    running = long_solve_in_the_server(env)
    running.send_signal(signal.SIGINT)
    _, err = running.communicate(timeout=30)
    assert running.returncode == 130 and "error: interrupted" in err
    assert proc.poll() is None and commands_run(env) == before + 1


def test_a_second_ctrl_c_stops_the_command_at_once(served):
    env, _ = served
    running = long_solve_in_the_server(env)
    running.send_signal(signal.SIGINT)
    time.sleep(0.05)
    running.send_signal(signal.SIGINT)
    _, err = running.communicate(timeout=30)
    assert running.returncode == 130 and "error: interrupted" in err


def test_a_caller_of_other_startup_settings_runs_the_command_itself(served):
    env, _ = served
    before = commands_run(env)
    out = planner(["solve", MELANGE, "--no-verify", "--format", "json"], dict(env, NUMBA_OPT="2"))
    assert out.returncode == 0, out.stderr
    assert commands_run(env) == before


def test_one_server_per_checkout(served):
    env, _ = served
    again = planner(["serve"], env)
    assert again.returncode == 2 and "already runs" in again.stderr
    detached = planner(["serve", "--detach"], env)
    assert detached.returncode == 0 and "already runs" in detached.stderr


def test_a_server_refuses_a_caller_of_other_code():
    stamp, env = client.code_stamp(), client.startup_env(os.environ)
    assert server.refusal({"stamp": stamp, "env": dict(os.environ)}, stamp, env) is None
    assert server.refusal({"stamp": "other", "env": dict(os.environ)}, stamp, env) == "the code changed"
    assert "startup settings" in server.refusal({"stamp": stamp, "env": dict(os.environ, NUMBA_OPT="0")}, stamp, env)


def test_what_is_forwarded(monkeypatch):
    monkeypatch.delenv(client.SKIP_ENV, raising=False)
    assert client.forwardable(["solve", "x.yaml"])
    assert not client.forwardable(["serve"]) and not client.forwardable(["--help"]) and not client.forwardable([])
    monkeypatch.setenv(client.SKIP_ENV, "1")
    assert not client.forwardable(["solve", "x.yaml"])


def test_stop_and_status_without_a_server(tmp_path):
    folder = tempfile.mkdtemp(prefix="ps", dir="/tmp")
    try:
        env = environment(folder)
        status = planner(["serve", "--status"], env)
        assert status.returncode == 1 and "no planner server runs" in status.stderr
        stop = planner(["serve", "--stop"], env)
        assert stop.returncode == 0 and "no planner server runs" in stop.stderr
        alone = planner(["solve", MELANGE, "--no-verify", "--format", "json"], env)  # no server: it runs in its own process
        assert alone.returncode == 0 and '"status"' in alone.stdout
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_socket_in_a_folder_others_can_enter_is_never_used():
    folder = tempfile.mkdtemp(prefix="ps", dir="/tmp")
    try:
        os.chmod(folder, 0o755)
        env = environment(folder)
        refused = planner(["serve"], env)
        assert refused.returncode == 2 and "chmod 700" in refused.stderr
        assert not client.private(Path(folder))
        os.chmod(folder, 0o700)
        assert client.private(Path(folder))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_the_planner_executable_hands_a_command_over_before_importing_the_cli(served):
    env, _ = served
    exe = Path(sys.executable).parent / "planner"
    if not exe.exists():
        pytest.skip("no planner executable beside this interpreter (not installed)")
    before = commands_run(env)
    warm = subprocess.run([str(exe), "catalog", "--format", "json"], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    alone = planner(["catalog", "--format", "json"], dict(env, PLANNER_NO_SERVER="1"))
    assert commands_run(env) == before + 1 and (warm.returncode, warm.stdout) == (alone.returncode, alone.stdout)
    code = "import sys, planner.launcher; print(sorted(m for m in ('click', 'planner.cli') if m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "[]"
