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
    header = {"stamp": stamp, "interpreter": client.interpreter(), "env": dict(os.environ), "argv": ["catalog"],
              "prog": "planner", "cwd": "/", "process": {}}
    assert server.refusal(header, stamp, env) is None
    assert server.refusal(dict(header, stamp="other"), stamp, env) == "the code changed"
    assert "startup settings" in server.refusal(dict(header, env=dict(os.environ, NUMBA_OPT="0")), stamp, env)


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


# ---- the server as a local service (issue 43; its threat model: docs/RELIABILITY.md, round four) ---------------------
def running_commands(env) -> int:
    out = planner(["serve", "--status"], env)
    assert out.returncode == 0, out.stderr
    return int(out.stdout.split(" running")[0].rsplit(" ", 1)[1])


def one_error_line(text: str) -> None:
    assert text.startswith("error:") and text.count("\n") == 1, text


def test_a_killed_clients_command_is_ended_before_it_writes(served, tmp_path):
    """A SIGKILLed client's command ran on and wrote its files 18 s later: its end of the connection closing now
    stops the command as Ctrl-C does."""
    env, proc = served
    out = tmp_path / "plan"
    running = subprocess.Popen(PLANNER + ["solve", str(ROOT / "scenarios" / "buildout-2027-2030.yaml"), "--out",
                                          str(out)], env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while running_commands(env) == 0:
        assert time.monotonic() < deadline and running.poll() is None
        time.sleep(0.1)
    running.kill()
    running.wait()
    deadline = time.monotonic() + 60
    while running_commands(env):
        assert time.monotonic() < deadline, "the dead client's command still runs"
        time.sleep(0.2)
    assert not out.exists() and proc.poll() is None


def test_a_client_that_trickles_its_request_holds_no_other(served):
    """A client sending one byte every few seconds held every other served command; requests are now read by one
    selector, each with its own deadline."""
    import socket
    import threading

    env, _ = served
    path = Path(env["PLANNER_SERVER_DIR"]) / client.socket_path().name
    done, conn = threading.Event(), socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(str(path))

    def trickle():
        try:
            for byte in b"S" + (7).to_bytes(8, "big") + b'{"a":1}':  # 16 bytes, 8 s: longer than both commands
                conn.send(bytes([byte]))
                time.sleep(0.5)
        except OSError:
            pass
        finally:
            done.set()

    threading.Thread(target=trickle, daemon=True).start()
    time.sleep(0.3)
    assert planner(["serve", "--status"], env).returncode == 0
    assert planner(["catalog", "--format", "json"], env).returncode == 0
    assert not done.is_set()  # both answered while the slow request was still arriving
    conn.close()


def test_the_callers_umask_is_the_served_commands(served, tmp_path):
    """`umask 077`: plan.json was written 644 by the server, 600 by the command's own process."""
    env, _ = served
    before = commands_run(env)
    modes = []
    for name, extra in (("warm", {}), ("alone", {"PLANNER_NO_SERVER": "1"})):
        out = tmp_path / name
        res = planner(["solve", MELANGE, "--no-verify", "--quiet", "--out", str(out)], dict(env, **extra),
                      preexec_fn=lambda: os.umask(0o077))
        assert res.returncode == 0, res.stderr
        modes.append(os.stat(out / "plan.json").st_mode & 0o777)
    assert commands_run(env) == before + 1 and modes == [0o600, 0o600]


def test_a_closed_standard_output_is_one_line_and_exit_1_served_or_not(served):
    """With stdout closed the socket took descriptor 1 and a served command wrote its output into the protocol (exit
    0, output lost); in its own process it was a traceback. Both are now one line, exit 1."""
    env, _ = served
    for extra in ({}, {"PLANNER_NO_SERVER": "1"}):
        res = subprocess.run(["bash", "-c", 'exec "$@" >&-', "bash", *PLANNER, "catalog"], env=dict(env, **extra),
                             cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert res.returncode == 1
        one_error_line(res.stderr)
        assert "standard output is closed" in res.stderr


def test_a_link_at_the_socket_path_is_never_connected_to(tmp_path):
    """A link at the socket path sent the client's argv, directory, environment and descriptors to whatever socket
    it named (another user's): the client now connects only to a socket of its own user's, never through a link."""
    import socket

    folder = tempfile.mkdtemp(prefix="ps", dir="/tmp")
    other = tempfile.mkdtemp(prefix="po", dir="/tmp")
    try:
        env = environment(folder)
        trap = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        trap.bind(os.path.join(other, "trap.sock"))
        trap.listen(4)
        trap.setblocking(False)
        name = subprocess.run([sys.executable, "-c", "from planner import client; print(client.socket_path().name)"],
                              env=env, capture_output=True, text=True, check=True).stdout.strip()
        os.symlink(os.path.join(other, "trap.sock"), os.path.join(folder, name))
        alone = planner(["catalog", "--format", "json"], dict(env, PLANNER_NO_SERVER="1"))
        linked = planner(["catalog", "--format", "json"], env)
        assert (linked.returncode, linked.stdout) == (alone.returncode, alone.stdout) and linked.returncode == 0
        with pytest.raises(BlockingIOError):
            trap.accept()  # nothing reached the other socket
        trap.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(other, ignore_errors=True)


def test_a_planted_log_link_is_never_followed(tmp_path):
    """`serve --detach` appended its log to whatever a planted `<hash>.log` link named, then exited 1: the folder is
    now checked first and the log opened without following a link; the victim is untouched, exit 2, one line."""
    folder = tempfile.mkdtemp(prefix="ps", dir="/tmp")
    try:
        env = environment(folder)
        victim = tmp_path / "victim"
        victim.write_text("precious\n")
        name = subprocess.run([sys.executable, "-c", "from planner import client; print(client.socket_path().name)"],
                              env=env, capture_output=True, text=True, check=True).stdout.strip()
        os.symlink(victim, os.path.join(folder, name.replace(".sock", ".log")))
        res = planner(["serve", "--detach"], env)
        assert res.returncode == 2 and "never followed" in res.stderr
        one_error_line(res.stderr)
        assert victim.read_text() == "precious\n"
        assert planner(["serve", "--status"], env).returncode == 1  # no server was started
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("where", ["a file", "under /dev/null", "too long for a socket", "open to others",
                                   "a link to a private folder"])
@pytest.mark.parametrize("how", [["serve"], ["serve", "--detach"]])
def test_a_server_folder_that_cannot_be_used_is_one_error_line_and_exit_2(where, how, tmp_path):
    """PLANNER_SERVER_DIR set to a file, to a path too long for a socket, or under /dev/null were tracebacks; a
    command still runs in its own process there."""
    base = tempfile.mkdtemp(prefix="pb", dir="/tmp")
    try:
        folder = {"a file": os.path.join(base, "file"), "under /dev/null": "/dev/null/planner",
                  "too long for a socket": os.path.join(base, "x" * 120), "open to others": os.path.join(base, "open"),
                  "a link to a private folder": os.path.join(base, "link")}[where]
        if where == "a file":
            Path(folder).write_text("")
        elif where == "open to others":
            os.mkdir(folder, 0o755)
            os.chmod(folder, 0o755)
        elif where == "a link to a private folder":
            os.mkdir(os.path.join(base, "private"), 0o700)
            os.symlink(os.path.join(base, "private"), folder)
        env = environment(folder)
        res = planner(how, env)
        assert res.returncode == 2, res.stderr
        one_error_line(res.stderr)
        assert "PLANNER_SERVER_DIR" in res.stderr
        assert planner(["catalog", "--format", "json"], env).returncode == 0
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_folder_or_peer_of_another_user_is_refused(monkeypatch, served):
    """Another user who made the folder first (or listens at the socket) is refused before anything is opened or
    sent; a root test machine stands in for the other user by changing the id the check compares with."""
    env, _ = served
    path = Path(env["PLANNER_SERVER_DIR"]) / client.socket_path().name
    conn = client.connect(path)
    assert conn is not None
    conn.close()
    monkeypatch.setattr(client, "peer_uid", lambda conn: os.getuid() + 4242)
    assert client.connect(path) is None  # the listening process is another user's
    monkeypatch.undo()
    real_uid = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: real_uid + 4242)
    with pytest.raises(client.UnsafeFolder, match="not yours"):
        client.make_folder(path.parent)
    assert not client.private(path.parent) and client.connect(path) is None


def test_each_interpreter_or_venv_has_its_own_server(monkeypatch):
    """A second venv on the same checkout (its python a link to the same binary) was served by the first venv's
    server: the socket's name and the server's refusal now tell venvs apart by their prefix."""
    stamp, env = client.code_stamp(), client.startup_env(os.environ)
    header = {"stamp": stamp, "interpreter": client.interpreter(), "env": dict(os.environ), "argv": ["catalog"],
              "prog": "planner", "cwd": "/", "process": {}}
    assert server.refusal(header, stamp, env) is None
    here = client.socket_path()
    monkeypatch.setattr(sys, "prefix", "/elsewhere/venv")
    assert client.socket_path() != here
    monkeypatch.undo()
    assert server.refusal(dict(header, interpreter="/other/python\0/other/venv"), stamp, env) == \
        "another interpreter or venv"
    assert server.refusal(dict(header, argv="catalog"), stamp, env) == "a request this server does not read"


def test_a_child_takes_the_callers_umask_limits_niceness_and_affinity():
    """Served commands ignored the caller's umask, `ulimit -f`, niceness and CPU affinity; a child now takes them
    (in a fork here, as the server's child does), or says why not, and the caller runs the command itself."""
    import resource

    settings = client.process_settings()
    cpus = sorted(os.sched_getaffinity(0))[:1]
    fsize = (1 << 20, resource.getrlimit(resource.RLIMIT_FSIZE)[1])
    settings.update(umask=0o077, nice=settings["nice"] + 3, affinity=cpus,
                    rlimits=dict(settings["rlimits"], RLIMIT_FSIZE=list(fsize)))
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        why = server.take_process_settings(settings)
        mask = os.umask(0)
        seen = [why, mask, os.getpriority(os.PRIO_PROCESS, 0), sorted(os.sched_getaffinity(0)),
                list(resource.getrlimit(resource.RLIMIT_FSIZE)),
                server.take_process_settings(dict(settings, rlimits={"RLIMIT_NOFILE": [1 << 40, 1 << 40]}))]
        os.write(write, repr(seen).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        seen = eval(pipe.read())  # noqa: S307 - our own child's repr of plain values
    os.waitpid(pid, 0)
    assert seen[:5] == [None, 0o077, settings["nice"], cpus, list(fsize)]
    assert "cannot be taken here" in seen[5]  # a hard limit beyond the system's: handed back
