"""The command line's side of ``planner serve`` (``planner.server``): a command hands itself to a warm planner
process of the same code when one is running, and runs in-process otherwise.

A command's own process then only starts Python and this module (about 0.05 s); the server's child runs it on the
caller's stdin, stdout and stderr (passed over the socket), in its working directory, with its environment and
arguments, and the exit status comes back. Standard library only: this runs before anything heavy is imported.

Protocol, on a Unix socket in a folder only the user can enter: the client sends one byte (``C`` a command,
``S`` status, ``Q`` stop), with the command's three descriptors where it is ``C``, then an 8-byte length and a JSON
header. The server answers in JSON lines: ``{"local": why}`` (run it yourself), or ``{"pid": p}`` from the child
that runs it, then ``{"exit": code}`` when it ends.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import sys
import tempfile
from pathlib import Path

from planner import __version__

ROOT = Path(__file__).resolve().parent.parent  # the checkout (or site-packages) holding planner/ and solvers/
PACKAGES = ("planner", "solvers")
LOCAL_COMMANDS = frozenset({"serve"})  # run in the caller's own process, never forwarded
SKIP_ENV = "PLANNER_NO_SERVER"  # set (to anything but "" or "0"): every command runs in its own process
# Settings read once, when numba and OpenMP start: a caller that differs from the server runs in its own process.
STARTUP_ENV_PREFIXES = ("NUMBA_", "OMP_", "PYTHON")
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def server_dir() -> Path:
    """Where the sockets live: PLANNER_SERVER_DIR, else a folder of this user's under XDG_RUNTIME_DIR or the
    temporary directory."""
    if os.environ.get("PLANNER_SERVER_DIR"):
        return Path(os.environ["PLANNER_SERVER_DIR"])
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return Path(base) / f"planner-{os.getuid()}"


def socket_path() -> Path:
    """One server per checkout and interpreter: the socket's name hashes both."""
    key = hashlib.sha256(f"{ROOT}\0{os.path.realpath(sys.executable)}".encode()).hexdigest()[:16]
    return server_dir() / f"{key}.sock"


def code_stamp() -> str:
    """A digest of the code and data the server loaded: every file's path, size and modification time under
    planner/ and solvers/ (about 160 stat calls, under 1 ms), with the version and interpreter. A server whose
    stamp no longer matches its files stops serving."""
    h = hashlib.sha256(f"{__version__}\0{sys.version}\0{os.path.realpath(sys.executable)}".encode())
    for package in PACKAGES:
        for folder, dirs, files in os.walk(ROOT / package):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                try:
                    st = os.stat(os.path.join(folder, name))
                except OSError:
                    continue
                h.update(f"{folder}/{name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def startup_env(env) -> dict[str, str]:
    """The environment variables that only take effect when a process starts (numba's, OpenMP's, Python's)."""
    return {k: v for k, v in env.items() if k.startswith(STARTUP_ENV_PREFIXES)}


def forwardable(argv: list[str]) -> bool:
    """A command (not a bare ``--help``), not one of LOCAL_COMMANDS, with forwarding not switched off."""
    if os.environ.get(SKIP_ENV, "") not in ("", "0"):
        return False
    return bool(argv) and not argv[0].startswith("-") and argv[0] not in LOCAL_COMMANDS


def program_name() -> str:
    """The name usage lines give the program, as click derives it: ``python -m planner.cli`` when run as a module,
    else the executable's name."""
    main = sys.modules.get("__main__")
    package = getattr(main, "__package__", None)
    spec = getattr(main, "__spec__", None)
    if package and spec is not None:
        return f"python -m {spec.name.removesuffix('.__main__')}"
    return os.path.basename(sys.argv[0] or "planner")


def private(folder: Path) -> bool:
    """Whether ``folder`` is this user's and closed to everyone else: a command sends its environment (which may
    hold secrets) to the socket in it, so a socket anyone else could have placed is never used."""
    try:
        st = os.stat(folder)
    except OSError:
        return False
    return st.st_uid == os.getuid() and not st.st_mode & 0o077


def connect(path: Path | None = None) -> socket.socket | None:
    """A connection to this checkout's server, or None where none answers (or its folder is not private)."""
    path = path or socket_path()
    if not path.exists() or not private(path.parent):
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(path))
    except OSError:
        conn.close()
        return None
    return conn


def send(conn: socket.socket, kind: bytes, header: dict, fds: list[int] | None = None) -> None:
    """One request: its kind byte (with the descriptors, if any), then the length-prefixed JSON header."""
    if fds:
        socket.send_fds(conn, [kind], fds)
    else:
        conn.sendall(kind)
    body = json.dumps(header).encode()
    conn.sendall(len(body).to_bytes(8, "big") + body)


def replies(conn: socket.socket):
    """The server's JSON lines, until it closes the connection."""
    with conn.makefile("rb") as lines:
        for line in lines:
            yield json.loads(line)


def ask(kind: bytes) -> dict | None:
    """Status (``S``) or stop (``Q``) of this checkout's server: its one reply, or None where none answers."""
    conn = connect()
    if conn is None:
        return None
    with conn:
        try:
            send(conn, kind, {})
            return next(replies(conn), None)
        except (OSError, ValueError):
            return None


def exit_if_served(argv: list[str]) -> None:
    """Run ``planner argv`` in this checkout's server and exit with its status, where one takes it (``forward``);
    return where the command must run here."""
    code = forward(argv)
    if code is not None:
        sys.exit(code)


def forward(argv: list[str]) -> int | None:
    """Run ``planner argv`` in this checkout's server; its exit status, or None where it must run here (no server,
    a server of other code or startup settings, or descriptors that cannot be passed)."""
    if not forwardable(argv):
        return None
    conn = connect()
    if conn is None:
        return None
    header = {"argv": argv, "prog": program_name(), "cwd": os.getcwd(), "env": dict(os.environ),
              "stamp": code_stamp()}
    with conn:
        try:
            send(conn, b"C", header, [0, 1, 2])
            answers = replies(conn)
            first = next(answers, None)
        except (OSError, ValueError):
            return None
        if not first or "pid" not in first:
            return None
        return await_exit(first["pid"], answers)


def await_exit(pid: int, answers) -> int:
    """Wait for the child's exit status, passing it the signals this process gets (Ctrl-C reaches the client,
    which the terminal knows; the child is the server's). A child that a passed signal ended without a word ends
    this process as that signal would (128 + its number)."""
    passed = []

    def pass_on(signum, frame):
        passed.append(signum)
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    previous = {s: signal.signal(s, pass_on) for s in FORWARDED_SIGNALS}
    try:
        for answer in answers:
            if "exit" in answer:
                return int(answer["exit"])
    except (OSError, ValueError):
        pass
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if passed:
        return 128 + int(passed[-1])
    sys.stderr.write("error: the planner server's process for this command ended without an exit status "
                     "(killed?); `planner serve --status` says whether the server still runs\n")
    return 1
