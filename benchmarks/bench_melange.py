"""Time planner against the Melange peer on the peer's own instance (issue 25 item 2), in one run.

(a) `planner solve benchmarks/data/melange-peer.yaml --format json -q` as a subprocess in its own process, warm
    (one untimed run first), median of 5; (a') the same command with a `planner serve` of this checkout running
    (started in a temporary folder, stopped after); (b) `planner.fleet.solve.solve` in-process, median of 5 after
    one warm-up; (c) the peer's whole command, `python -m melange.main -c melange/config/example.json`, from a
    fetched copy of github.com/tyler-griggs/melange-release, run by $MELANGE_PYTHON (an interpreter with the peer's
    requirements: pulp 2.8.0, numpy, pandas, ruamel.yaml; default this one), only where pulp imports there: nothing
    is installed. The copy is looked for at $MELANGE_REPO (a checkout) or the local git mirror
    /work/.mirror/tyler-griggs+melange-release/repo (exported to a temporary folder). Prints one JSON line.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "benchmarks" / "data" / "melange-peer.yaml"
PLANNER = Path(sys.executable).parent / "planner"
MIRROR = Path("/work/.mirror/tyler-griggs+melange-release/repo")
PEER_DOCUMENTED = {"A10G": 3, "A100-80GB": 1, "cost": 6.7, "from": "melange-release README.md lines 46-53"}
RUNS = 5


def _median_time(fn, runs=RUNS):
    times = []
    out = None
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def _answer(plan: dict) -> dict:
    gpus: dict[str, float] = {}
    usd_h = 0.0
    for r in plan.get("rentals") or []:
        gpus[r["hardware"]] = gpus.get(r["hardware"], 0) + r["chips"]
        usd_h += r["chips"] * r["usd_per_chip_hour"]
    for f in plan.get("fleet") or []:
        if f.get("racks_new") or f.get("racks_installed"):
            gpus[f["hardware"] + " (racks bought)"] = f.get("racks_new", 0) + f.get("racks_installed", 0)
    total = plan.get("totals", {}).get("annual_cost_usd")
    return {"gpus": gpus, "rent_usd_per_h": round(usd_h, 4),
            "annual_cost_usd_per_h": round(total / 8760, 4) if total is not None else None}


def bench_cli(env=None):
    cmd = [str(PLANNER), "solve", str(SCENARIO), "--format", "json", "-q"]
    env = dict(os.environ, PLANNER_NO_SERVER="1") if env is None else env

    def once():
        res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True, env=env)
        return json.loads(res.stdout)

    once()  # warm the cache
    return _median_time(once)


def bench_served():
    """(a'): the command with a planner server running, or None where it did not start."""
    with tempfile.TemporaryDirectory(prefix="ps", dir="/tmp") as folder:
        env = {k: v for k, v in os.environ.items() if k != "PLANNER_NO_SERVER"}
        env["PLANNER_SERVER_DIR"] = folder
        started = subprocess.run([str(PLANNER), "serve", "--detach"], env=env, capture_output=True, text=True)
        if started.returncode != 0:
            return None, None
        try:
            return bench_cli(env)
        finally:
            subprocess.run([str(PLANNER), "serve", "--stop"], env=env, capture_output=True)


def bench_library():
    from planner.fleet.solve import solve
    from planner.scenario import load_scenario

    def once_plan():
        return solve(load_scenario(SCENARIO))

    once_plan()  # warm-up
    t, plan = _median_time(once_plan)
    return t, {"rentals": plan.rentals}


def _peer_copy(tmp: Path) -> Path | None:
    env = os.environ.get("MELANGE_REPO")
    if env and (Path(env) / "melange" / "main.py").exists():
        return Path(env)
    if MIRROR.exists():
        dest = tmp / "melange-release"
        dest.mkdir()
        archive = subprocess.run(["git", "--git-dir", str(MIRROR), "archive", "HEAD"], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
        return dest
    return None


def bench_peer():
    """The peer's own command, or why it could not run."""
    python = os.environ.get("MELANGE_PYTHON", sys.executable)
    probe = subprocess.run([python, "-c", "import pulp"], capture_output=True, text=True)
    if probe.returncode != 0:
        return None, None, (f"not run: pulp (the peer's ILP dependency, requirements.txt) is not installed in {python}; "
                            "set MELANGE_PYTHON to an interpreter that has it; nothing is installed by this benchmark")
    with tempfile.TemporaryDirectory() as tmp:
        repo = _peer_copy(Path(tmp))
        if repo is None:
            return None, None, "not run: no copy of melange-release (set MELANGE_REPO)"
        cmd = [python, "-m", "melange.main", "-c", "melange/config/example.json"]

        def once():
            subprocess.run(cmd, cwd=repo, capture_output=True, text=True, check=True)
            return json.loads((repo / "melange_result.json").read_text())

        once()
        t, out = _median_time(once)
        return t, out, "ran"


def main():
    cli_s, cli_plan = bench_cli()
    served_s, served_plan = bench_served()
    lib_s, lib_plan = bench_library()
    peer_s, peer_out, peer_status = bench_peer()
    print(json.dumps({
        "scenario": str(SCENARIO.relative_to(ROOT)),
        "planner_cli_warm_median_s": round(cli_s, 4),
        "planner_cli_served_median_s": round(served_s, 4) if served_s is not None else None,
        "planner_library_median_s": round(lib_s, 4),
        "peer_command_median_s": round(peer_s, 4) if peer_s is not None else None,
        "peer_status": peer_status,
        "planner_answer": _answer(cli_plan),
        "planner_served_answer": _answer(served_plan) if served_plan is not None else None,
        "planner_library_answer": _answer(lib_plan),
        "peer_answer": peer_out if peer_out is not None else PEER_DOCUMENTED,
        "peer_answer_source": "peer command output" if peer_out is not None else "documented (peer not run)",
        "runs": RUNS,
    }))


if __name__ == "__main__":
    main()
