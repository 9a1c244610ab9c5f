"""The command line's side of ``planner serve`` (``planner.server``): a command hands itself to a warm planner
process of the same code when one is running, and runs in-process otherwise.

A command's own process then only starts Python and this module (about 0.05 s); the server's child runs it on the
caller's stdin, stdout and stderr (passed over the socket), in its working directory, with its environment and
arguments, and the exit status comes back. Standard library only: this runs before anything heavy is imported.

Protocol, on a Unix socket in a folder only the user can enter: the client sends one byte (``C`` a command,
``S`` status, ``Q`` stop), with the command's three descriptors where it is ``C``, then an 8-byte length and a JSON
header. The server answers in JSON lines: ``{"local": why}`` (run it yourself), or ``{"pid": p}`` from the child
that runs it, then ``{"exit": code}`` when it ends. The client keeps the connection open until then: its end (the
client killed) ends the command.

Threat model (docs/RELIABILITY.md, round four): other local users may create files and links anywhere they can
write, including the temporary directory, before the server starts. So no path in the server's folder is opened
before the folder itself, opened without following a link, is found to be a directory of this user's closed to
others; files in it are opened relative to that descriptor without following links; the client connects only to a
socket (not a link) of this user's, and both ends check the other's user id on the connection (SO_PEERCRED). What
the command runs with is the caller's: descriptors, directory, environment, arguments, umask, resource limits,
niceness, CPU affinity and interpreter (a server of another interpreter or venv is another socket).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import stat
import struct
import sys
import tempfile
from pathlib import Path

from planner import __version__
from planner.errors import InputError

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


def interpreter() -> str:
    """The interpreter and its environment: a venv's python is often a link to the same binary as another venv's,
    so the prefix (the venv) tells them apart (issue 43: a second venv was served by the first one's server)."""
    return f"{os.path.realpath(sys.executable)}\0{sys.prefix}"


def socket_path() -> Path:
    """One server per checkout and interpreter: the socket's name hashes both."""
    key = hashlib.sha256(f"{ROOT}\0{interpreter()}".encode()).hexdigest()[:16]
    return server_dir() / f"{key}.sock"


SOCKET_PATH_BYTES = 107  # the longest path an AF_UNIX address holds on Linux (108 with its terminating zero)


class UnsafeFolder(InputError):
    """The server's folder cannot be used: not a directory, not this user's, open to others, or not creatable. A
    server refuses to start (``planner serve``: one error line naming PLANNER_SERVER_DIR, exit 2); a command runs in
    its own process."""

    def __init__(self, message: str):
        super().__init__(message, field="PLANNER_SERVER_DIR")


def socket_folder(path: Path) -> int:
    """The folder of the socket ``path``, made and checked (``make_folder``), once the path fits a socket's address;
    UnsafeFolder otherwise."""
    if len(os.fsencode(path)) > SOCKET_PATH_BYTES:
        raise UnsafeFolder(f"the socket {path} would be {len(os.fsencode(path))} bytes; a Unix socket's path holds "
                           f"at most {SOCKET_PATH_BYTES}: set it to a shorter folder")
    return make_folder(path.parent)


def open_log(folder: int, name: str) -> int:
    """``name`` in the checked ``folder`` opened to append (made 600 where missing), never through a link, and only
    if it is a file of this user's (issue 43: a planted ``.log -> victim`` had the server write to the victim)."""
    try:
        fd = os.open(name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                     dir_fd=folder)
    except OSError as exc:
        raise UnsafeFolder(f"the server's log {name} cannot be opened ({exc.strerror or exc}; a link is never "
                           f"followed)") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
        os.close(fd)
        raise UnsafeFolder(f"the server's log {name} is not a file of yours")
    return fd


def make_folder(folder: Path) -> int:
    """The server's folder, created where missing (mode 700), as a descriptor opened without following a link, once
    it is a directory of this user's closed to others; UnsafeFolder otherwise, before any path in it is opened."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise UnsafeFolder(f"{folder} cannot be made a folder ({exc.strerror or exc})") from None
    return open_folder(folder)


def open_folder(folder: Path) -> int:
    """``folder`` as a descriptor (O_NOFOLLOW: a link in its place is refused), checked to be this user's and closed
    to others; UnsafeFolder otherwise. A command sends its environment (which may hold secrets) to the socket in it,
    so a folder anyone else could have made or entered is never used."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise UnsafeFolder(f"{folder} is not a folder this server can use ({exc.strerror or exc}; a link is "
                           f"never followed)") from None
    st = os.fstat(fd)
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        os.close(fd)
        owner = "yours" if st.st_uid == os.getuid() else f"user {st.st_uid}'s, not yours"
        raise UnsafeFolder(f"{folder} is {owner}, mode {stat.S_IMODE(st.st_mode):o}: it must be yours and closed to "
                           f"others (chmod 700), since commands send their environment through it")
    return fd


def private(folder: Path) -> bool:
    """Whether ``folder`` is a directory of this user's, closed to everyone else, and not a link."""
    try:
        os.close(open_folder(folder))
    except UnsafeFolder:
        return False
    return True


def own_socket(folder_fd: int, name: str) -> bool:
    """Whether ``name`` in the folder is a socket of this user's (a link there, even to one, is not)."""
    try:
        st = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISSOCK(st.st_mode) and st.st_uid == os.getuid()


def peer_uid(conn: socket.socket) -> int | None:
    """The user id of the process at the other end of a Unix socket (None where the system does not say)."""
    if not hasattr(socket, "SO_PEERCRED"):
        return None
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]


def same_user(conn: socket.socket) -> bool:
    uid = peer_uid(conn)
    return uid is None or uid == os.getuid()


def code_stamp() -> str:
    """A digest of the code and data the server loaded: every file's path, size and modification time under
    planner/ and solvers/ (about 160 stat calls, under 1 ms), with the version and interpreter. A server whose
    stamp no longer matches its files stops serving."""
    h = hashlib.sha256(f"{__version__}\0{sys.version}\0{interpreter()}".encode())
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


def connect(path: Path | None = None) -> socket.socket | None:
    """A connection to this checkout's server, or None where none answers, or where anything about it is not this
    user's alone: the folder (a link, another owner, open to others), the socket (a link, another owner), or the
    process listening (its user id on the connection)."""
    path = path or socket_path()
    if len(os.fsencode(path)) > SOCKET_PATH_BYTES:
        return None
    try:
        folder = open_folder(path.parent)
    except UnsafeFolder:
        return None
    try:
        if not own_socket(folder, path.name):
            return None
    finally:
        os.close(folder)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(path))
        if same_user(conn):
            return conn
    except OSError:
        pass
    conn.close()
    return None


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
    return where the command must run here. A closed standard output ends it first, served or not: one line, exit
    1 (it was a traceback in the command's own process, and a served command wrote into the socket, issue 43)."""
    if sys.stdout is None:
        if sys.stderr is not None:
            sys.stderr.write("error: standard output is closed: the command's answer would be lost (redirect it to "
                             "a file or to /dev/null)\n")
        sys.exit(1)
    code = forward(argv)
    if code is not None:
        sys.exit(code)


def standard_descriptors_open() -> bool:
    """Whether stdin, stdout and stderr are open: a closed one would be taken by the socket itself (the lowest free
    descriptor), and the served command would write its output into the protocol (issue 43: exit 0, output lost)."""
    try:
        for fd in (0, 1, 2):
            os.fstat(fd)
    except OSError:
        return False
    return True


def process_settings() -> dict:
    """What the command's own process would run with beyond its environment: umask, resource limits, niceness and
    CPU affinity (the served child takes them, or hands the command back where it cannot)."""
    import resource

    mask = os.umask(0o022)
    os.umask(mask)
    limits = {name: list(resource.getrlimit(getattr(resource, name))) for name in dir(resource)
              if name.startswith("RLIMIT_") and isinstance(getattr(resource, name), int)}
    affinity = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {"umask": mask, "rlimits": limits, "nice": os.getpriority(os.PRIO_PROCESS, 0), "affinity": affinity}


def forward(argv: list[str]) -> int | None:
    """Run ``planner argv`` in this checkout's server; its exit status, or None where it must run here (no server,
    a server of other code, interpreter or startup settings, process settings it cannot take, a standard
    descriptor closed, or descriptors that cannot be passed)."""
    if not forwardable(argv) or not standard_descriptors_open():
        return None
    try:
        cwd = os.getcwd()
    except OSError:  # a working directory since removed: the command's own process says what that means
        return None
    conn = connect()
    if conn is None:
        return None
    header = {"argv": argv, "prog": program_name(), "cwd": cwd, "env": dict(os.environ),
              "stamp": code_stamp(), "interpreter": interpreter(), "process": process_settings()}
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
