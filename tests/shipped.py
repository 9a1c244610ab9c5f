"""Each shipped scenario's plan as ``planner.fleet.solve.solve`` gives it (the file as it is, its own solver and
limits, the MILP's plan, not simulated), solved once per test run however many test files read it: the first test
process that asks solves it and stores it (pickled) in the run's shared folder, which ``tests/conftest.py`` names
in SHARED before pytest-xdist starts its workers; the others wait for it (a lock a scenario) and read it. Each
caller gets its own copy. Five test files solved mixed-site and the build-out again each (7 s and 16 s a solve).

Only for tests that read the shipped plan: a test that changes how ``solve`` works, or solves with settings of its
own, solves for itself."""

from __future__ import annotations

import fcntl
import os
import pickle
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = "PLANNER_TESTS_SHARED"  # the folder shared by a run's test processes (set by tests/conftest.py)

_mine: dict[str, bytes] = {}  # where no shared folder is set (a test run by hand, say): this process's own


def shipped_plan(name: str):
    """The plan (``planner.fleet.plan.Plan`` or a build-out's plan) of ``scenarios/NAME.yaml``, a fresh copy."""
    return pickle.loads(_stored(name))


def _stored(name: str) -> bytes:
    folder = os.environ.get(SHARED)
    if not folder:
        if name not in _mine:
            _mine[name] = _solved(name)
        return _mine[name]
    path = Path(folder) / f"{name}.pickle"
    with open(Path(folder) / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one process solves; the others wait here, then read its file
        if not path.exists():
            data = _solved(name)
            with tempfile.NamedTemporaryFile(dir=folder, delete=False) as out:  # whole or not at all
                out.write(data)
            os.replace(out.name, path)
        return path.read_bytes()


def _solved(name: str) -> bytes:
    from planner.fleet.solve import solve
    from planner.scenario import load_scenario

    return pickle.dumps(solve(load_scenario(ROOT / "scenarios" / f"{name}.yaml")))
