"""``planner serve``: a warm planner process for this checkout. It imports the packages and loads every cached
kernel once (0.6-0.9 s that every command otherwise pays: imports 0.3-0.4 s, numba's start and kernels
0.2-0.4 s), then forks a child per command, which runs it as ``planner`` would on the caller's descriptors,
directory, environment and arguments (``planner.client`` is the caller's side and holds the protocol).

A fork starts with the server's memory and no other thread, so the server runs nothing that starts threads a
child would need: no parallel region (numba), no solver, no polars query. Loading a parallel kernel does start
numba's OpenMP layer, which records the server's pid and refuses to run in another process; a child starts the
layer again for itself (``restart_openmp``). Each command gets a fresh child, so no command sees another's state,
and one that crashes or is killed takes only itself.
"""

from __future__ import annotations

import atexit
import ctypes
import importlib
import io
import json
import os
import pkgutil
import signal
import socket
import subprocess
import sys
import time
import traceback

from numba.core.registry import CPUDispatcher
from numba.np.ufunc import parallel as numba_parallel

from planner import client, interrupts
from planner.errors import InputError
from planner.kernel_cache import kernels_cached
from solvers.jit import Driver

# Modules not imported ahead: optional extras, and this module's own entry points.
SKIP_MODULES = ("planner.sweep.ray",)
# Libraries the commands import inside functions (to keep `planner --help` instant), imported ahead here.
LIBRARIES = ("ortools.math_opt.python.mathopt", "ortools.sat.sat_parameters_pb2", "polars", "rich.console",
             "rich.table", "rich.progress", "rich.box", "matplotlib", "matplotlib.ticker", "multiprocessing")
# Caches of package data, filled ahead so that each child inherits them (the data files are in the code stamp).
DATA_CACHES = (("planner.catalog", ("hardware_catalog", "model_catalog", "serving_engines", "sources",
                                    "kernel_counts")),
               ("planner.perf.calibration", ("calibration_data",)))
ACCEPT_TICK_S = 1.0  # how often an idle server checks its idle time and its code stamp


def preload() -> dict:
    """Import every module of planner/ and solvers/, load every cached kernel, fill the data caches. Kernels not
    yet compiled are compiled by ``planner warmup`` in a process of its own (compiling runs them, and a run would
    start threads here). Returns counts and seconds, for the server's first line."""
    t0 = time.perf_counter()
    if not kernels_cached():
        subprocess.run([sys.executable, "-m", "planner.cli", "warmup"], check=False,
                       env=dict(os.environ, **{client.SKIP_ENV: "1"}))
    modules = import_all()
    for name in LIBRARIES:
        try:
            importlib.import_module(name)
        except ImportError:
            continue
    kernels = load_cached_kernels(modules)
    for module, names in DATA_CACHES:
        for name in names:
            getattr(importlib.import_module(module), name)()
    return {"modules": len(modules), "kernels": kernels, "seconds": time.perf_counter() - t0}


def import_all() -> list:
    """Every importable module of the packages (one whose optional dependency is missing is skipped)."""
    modules = []
    for package in client.PACKAGES:
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, package + "."):
            if info.name.startswith(SKIP_MODULES) or info.name.endswith("__main__"):
                continue
            try:
                modules.append(importlib.import_module(info.name))
            except ImportError:
                continue
    return modules


def load_cached_kernels(modules) -> int:
    """Each jitted function's cached machine code, loaded for every signature in its cache index (loading does not
    run it). Returns how many were loaded."""
    loaded = 0
    for module in modules:
        for dispatcher in module_dispatchers(module):
            for key in dispatcher._cache._cache_file._load_index():
                try:
                    dispatcher.compile(key[0])
                    loaded += 1
                except Exception:  # noqa: BLE001 - an entry of another numba or CPU: the child compiles it
                    continue
    return loaded


def module_dispatchers(module):
    """The cached numba functions a module defines (both builds of each parallel driver)."""
    for obj in vars(module).values():
        if getattr(obj, "__module__", None) != module.__name__:
            continue
        for dispatcher in obj.dispatchers if isinstance(obj, Driver) else (obj,):
            if isinstance(dispatcher, CPUDispatcher) and dispatcher._cache:
                yield dispatcher


def restart_openmp() -> None:
    """In a child: numba's OpenMP layer, started in the server, checks that it runs in the process that started
    it; starting it again records the child."""
    if numba_parallel._threading_layer == "omp":
        from numba.np.ufunc import omppool

        ctypes.CFUNCTYPE(None, ctypes.c_int)(omppool.launch_threads)(numba_parallel.NUM_THREADS)


def serve(command, idle_s: float = 3600.0, say=None) -> str:
    """Serve this checkout's commands until stopped (``planner serve --stop``, SIGTERM, Ctrl-C), idle for
    ``idle_s`` seconds, or the code changes under it. ``command``: the click group a child runs. Returns why it
    stopped."""
    path = client.socket_path()
    if client.ask(b"S") is not None:
        raise InputError(f"a planner server already runs for this checkout ({path}); `planner serve --stop` first")
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not client.private(path.parent):
        raise InputError(f"{path.parent} (the server's folder; PLANNER_SERVER_DIR) must be yours and closed to "
                         f"others (chmod 700): commands send their environment through it")
    path.unlink(missing_ok=True)
    loaded = preload()
    stamp, env = client.code_stamp(), client.startup_env(os.environ)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(64)
    listener.settimeout(ACCEPT_TICK_S)
    server_pid, started = os.getpid(), time.time()
    state = {"commands": 0, "last": time.monotonic(), "stop": None}
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel; their status goes by socket
    signal.signal(signal.SIGTERM, lambda s, f: state.update(stop="SIGTERM"))
    if say:
        say(f"planner server ready (pid {server_pid}, {loaded['modules']} modules and {loaded['kernels']} kernels "
            f"loaded in {loaded['seconds']:.1f} s; socket {path}); this checkout's commands now run in it; "
            f"`planner serve --stop` or Ctrl-C stops it")
    try:
        while state["stop"] is None:
            try:
                conn, _ = listener.accept()
            except (socket.timeout, InterruptedError):
                if time.monotonic() - state["last"] > idle_s:
                    state["stop"] = f"idle for {idle_s:g} s"
                elif client.code_stamp() != stamp:
                    state["stop"] = "the code changed"
                continue
            state["last"] = time.monotonic()
            with conn:
                handle(conn, command, listener, stamp, env, state, started)
    except KeyboardInterrupt:
        state["stop"] = "interrupted"
    finally:
        if os.getpid() == server_pid:
            listener.close()
            path.unlink(missing_ok=True)
    return state["stop"]


def handle(conn, command, listener, stamp: str, env: dict, state: dict, started: float) -> None:
    """One request: a status, a stop, or a command run by a forked child."""
    conn.settimeout(10.0)  # a client that connects and says nothing must not hold the server
    try:
        kind, fds, _, _ = socket.recv_fds(conn, 1, 3)
        header = read_header(conn)
    except (OSError, ValueError):
        return
    conn.settimeout(None)
    try:
        if kind == b"S":
            reply(conn, {"pid": os.getpid(), "since": started, "commands": state["commands"], "root": str(
                client.ROOT)})
        elif kind == b"Q":
            state["stop"] = "stopped"
            reply(conn, {"stopped": os.getpid()})
        elif kind == b"C" and len(fds) == 3:
            why = refusal(header, stamp, env)
            if why:
                reply(conn, {"local": why})
                if why == "the code changed":
                    state["stop"] = why
                return
            state["commands"] += 1
            if os.fork() == 0:
                run_child(conn, header, fds, command, listener)  # never returns
    finally:
        for fd in fds:
            os.close(fd)


def read_header(conn) -> dict:
    size = int.from_bytes(read_exactly(conn, 8), "big")
    return json.loads(read_exactly(conn, size))


def read_exactly(conn, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = conn.recv(min(left, 1 << 20))
        if not chunk:
            raise ValueError("the client closed the connection mid-request")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def reply(conn, message: dict) -> None:
    try:
        conn.sendall((json.dumps(message) + "\n").encode())
    except OSError:
        pass


def refusal(header: dict, stamp: str, env: dict) -> str | None:
    """Why the caller must run its command itself, or None: other code, or other startup settings."""
    if header.get("stamp") != stamp or client.code_stamp() != stamp:
        return "the code changed"
    if client.startup_env(header.get("env", {})) != env:
        return "other startup settings (NUMBA_*, OMP_*, PYTHON*)"
    return None


def run_child(conn, header: dict, fds: list[int], command, listener) -> None:
    """The forked child: become the caller's command, run it, send its exit status, and end."""
    code = 1
    try:
        listener.close()
        for signum, handler in ((signal.SIGCHLD, signal.SIG_DFL), (signal.SIGTERM, signal.SIG_DFL),
                                (signal.SIGINT, signal.default_int_handler)):
            signal.signal(signum, handler)
        restart_openmp()
        take_descriptors(fds, header["env"])
        os.chdir(header["cwd"])
        os.environ.clear()
        os.environ.update(header["env"])
        time.tzset()
        sys.argv = [header["prog"], *header["argv"]]
        interrupts.before_exit.append(lambda status: reply(conn, {"exit": status}))
        reply(conn, {"pid": os.getpid()})
        code = run_command(command, header["argv"], header["prog"])
    except BaseException:  # noqa: BLE001 - the child must always answer and end here
        traceback.print_exc()
    finally:
        finish(conn, code)


def take_descriptors(fds: list[int], env: dict) -> None:
    """The caller's stdin, stdout and stderr as this process's 0, 1 and 2, with Python's streams over them
    (line-buffered on a terminal, as Python makes them)."""
    for target, fd in zip((0, 1, 2), fds):
        os.dup2(fd, target)
    unbuffered = env.get("PYTHONUNBUFFERED", "") not in ("", "0")
    encoding, errors = sys.stdout.encoding or "utf-8", sys.stdout.errors or "strict"
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding=encoding,
                                                 errors=errors)
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding=encoding,
                                                   errors=errors, line_buffering=os.isatty(1),
                                                   write_through=unbuffered)
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding=encoding,
                                                   errors="backslashreplace", line_buffering=True)


def run_command(command, argv: list[str], prog: str) -> int:
    """The command's exit status, as ``planner argv`` would end."""
    try:
        command.main(args=argv, prog_name=prog)
        return 0
    except SystemExit as exc:
        if exc.code is None:
            return 0
        if isinstance(exc.code, int):
            return exc.code
        sys.stderr.write(f"{exc.code}\n")
        return 1


def finish(conn, code: int) -> None:
    """What Python does at exit (atexit handlers, flushing), then the status to the caller, then the end."""
    try:
        atexit._run_exitfuncs()
    except BaseException:  # noqa: BLE001
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    reply(conn, {"exit": code})
    os._exit(code)
