"""``planner export``: each allocation row of a plan as an engine's launch command or config, and for Dynamo and
llm-d the Kubernetes manifests with replica counts (docs/EXPORT.md). A registry of targets, one module each; a
row the target does not run (a hosted API, chips it does not serve) is listed as skipped with the reason, and a
setting it cannot express on a row it runs is refused (InputError, exit 2) naming the row and the setting."""

from __future__ import annotations

from pathlib import Path

from planner.errors import InputError
from planner.export import dynamo, llmd, sglang, trtllm, vllm
from planner.export.common import Export, Launch, run_target
from planner.export.rows import PlanRows, Refusal, plan_rows
from planner.writing import atomic_write

TARGETS = {"vllm": vllm.TARGET, "sglang": sglang.TARGET, "trtllm": trtllm.TARGET, "dynamo": dynamo.TARGET,
           "llm-d": llmd.TARGET}

__all__ = ["TARGETS", "Export", "Launch", "PlanRows", "Refusal", "export_plan", "write_export"]


def export_plan(plan, target: str, period: str | None = None, demand_scenario: str | None = None,
                strict: bool = False, row: int | None = None) -> Export:
    """A plan (path to plan.json, dict or Plan) exported for ``target``; a build-out's at ``period`` (default its
    last) in ``demand_scenario`` (default its most probable). ``strict`` or a single ``row`` make a skipped row
    exit 2."""
    if target not in TARGETS:
        raise InputError(f"unknown target {target!r}; known: {', '.join(TARGETS)}", field="--to")
    return run_target(TARGETS[target], plan_rows(plan, period, demand_scenario), strict=strict, row=row)


def write_export(export: Export, out_dir) -> list[Path]:
    """The export's files into ``out_dir`` (made if missing), each written whole or not at all; scripts
    executable."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, body in export.files.items():
        path = out / name
        atomic_write(path, body.encode("utf-8"))
        if name.endswith(".sh"):
            path.chmod(path.stat().st_mode | 0o111)
        written.append(path)
    return written
