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
from planner.writing import atomic_write, folder_locked

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
    """The export's files into ``out_dir`` (made if missing), each written whole or not at all (a temporary file
    renamed over it), scripts executable, ``manifest.json`` and ``README.md`` last, under the folder's lock: two
    exports into one folder take turns, and the manifest last written describes the files its own export wrote
    (issue 43). A file in the way that is not a regular file is refused before anything is written."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InputError("exists and is not a directory", field="--out", file=str(out))
    out.mkdir(parents=True, exist_ok=True)
    last = ("manifest.json", "README.md")
    names = [n for n in export.files if n not in last] + [n for n in last if n in export.files]
    for name in names:
        path = out / name
        if (path.exists() or path.is_symlink()) and not path.is_file():
            raise InputError(f"{name} exists and is not a regular file; refusing to replace it", field="--out",
                             file=str(path))
    written = []
    with folder_locked(out):
        for name in names:
            path = out / name
            atomic_write(path, export.files[name].encode("utf-8"))
            if name.endswith(".sh"):
                path.chmod(path.stat().st_mode | 0o111)
            written.append(path)
    return written
