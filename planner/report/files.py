"""Writing user files atomically (a crash or Ctrl-C never leaves a partial file behind): single files, and a
plan's tables as CSV and Parquet with the whole plan as plan.json."""

from __future__ import annotations

import os
from pathlib import Path

from planner.errors import InputError
from planner.report.render import to_json
from planner.writing import FOLDER_LOCK, atomic_write, folder_locked  # noqa: F401 - atomic_write re-exported here


def flush_stdout() -> None:
    """Flush standard output now, so that a full disk (``> /dev/full``) or a closed pipe surfaces as an OSError
    naming it while the CLI can still say so in one line, not at the interpreter's exit."""
    import sys

    try:
        sys.stdout.flush()
    except OSError as exc:
        exc.filename = "standard output"
        raise


def silence_stdout() -> None:
    """After standard output failed: point its descriptor at /dev/null, so that the interpreter's last flush of
    what is still buffered cannot fail again (Python's advice for a broken pipe, docs of the signal module)."""
    import sys

    try:
        sys.stdout.flush()
        return
    except (OSError, ValueError):
        pass
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(df):
    """The table with every text cell that a spreadsheet would run as a formula (it starts with =, +, -, @, a tab
    or a carriage return: a workload named ``=HYPERLINK(...)``) prefixed with a quote, for CSV only; Parquet and
    JSON keep the text as it is."""
    import polars as pl

    text = [c for c, t in df.schema.items() if t == pl.Utf8]
    if not text:
        return df
    pattern = "^[" + "".join("\\" + p if p in "+-" else p for p in FORMULA_PREFIXES) + "]"
    return df.with_columns([pl.when(pl.col(c).str.contains(pattern)).then(pl.lit("'") + pl.col(c))
                            .otherwise(pl.col(c)).alias(c) for c in text])


def plan_json(plan, reason: str | None = None) -> str:
    """The plan as the interface's JSON, with the reason of an infeasible plan."""
    d = plan.to_dict()
    if reason:
        d["reason"] = reason
    return to_json(d)


PLAN_TABLES = ("fleet", "allocation", "workloads", "alternatives", "tiers", "curtailment")
LOCK_NAME = FOLDER_LOCK


def plan_file_contents(plan, reason: str | None = None) -> dict[str, bytes]:
    """Every file ``--out`` writes, by name: each table as CSV and Parquet, and plan.json."""
    import io

    files = {}
    prov = plan.provenance or {}
    metadata = {"planner.scenario": str(plan.scenario), "planner.status": str(plan.status),
                "planner.version": str(prov.get("planner_version", "")),
                "planner.catalog_version": str(prov.get("catalog_version", ""))}
    if getattr(plan, "is_buildout", False):
        from planner.report.buildout import frames

        tables = frames(plan)
    else:
        import polars as pl

        tables = {name: getattr(plan, name) for name in PLAN_TABLES}
        if getattr(plan, "rentals", None):  # the chips rented per offer, where the plan rents any
            tables["rentals"] = pl.DataFrame(plan.rentals)
    for name, df in tables.items():
        if df is None:
            continue
        files[f"{name}.csv"] = spreadsheet_safe(df).write_csv().encode("utf-8")
        buf = io.BytesIO()
        df.write_parquet(buf, metadata={**metadata, "planner.table": name})  # which plan a file came from
        files[f"{name}.parquet"] = buf.getvalue()
    files["plan.json"] = (plan_json(plan, reason) + "\n").encode("utf-8")
    return files


def write_files(plan, out: Path, reason: str | None = None) -> None:
    """Write the plan's own files into ``out`` (created if missing), each atomically (a temporary file renamed over
    it), plan.json last, under a lock that makes concurrent writers take turns. Nothing else in ``out`` is read,
    copied or changed, and ``out`` itself (its mode, its place) stays as it is. Everything is rendered before the
    first file is written, so a failure there writes nothing; a crash or Ctrl-C between two files leaves each file
    whole, the new tables beside the previous plan.json at worst."""
    check_output_dir(out, "--out")
    files = plan_file_contents(plan, reason)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for name in files:
        target = out / name
        if target.exists() and not target.is_file():
            raise InputError(f"{name} exists and is not a regular file; refusing to replace it", field="--out",
                             file=str(target))
    with folder_locked(out):
        for name, data in files.items():  # plan.json is the last key
            atomic_write(out / name, data)


def check_output_file(path, field: str, inputs=()) -> None:
    """Refuse, before any work, an output file that cannot or must not be written: an existing path that is not a
    regular file (a device, a directory), one of the command's input files, or a path whose directory is missing or
    not writable. Raises InputError naming the option."""
    p = Path(path)
    if p.exists() or p.is_symlink():
        if not p.is_file():
            raise InputError("exists and is not a regular file; refusing to replace it", field=field, file=str(p))
        for item in inputs:
            try:
                if os.path.samefile(p, item):
                    raise InputError("is an input of this command; refusing to overwrite it", field=field,
                                     file=str(p))
            except OSError:
                continue
    parent = p.resolve().parent if p.exists() else p.absolute().parent
    if not parent.is_dir():
        raise InputError(f"directory {parent} does not exist", field=field, file=str(p))
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"cannot write in {parent}", field=field, file=str(p))


def check_output_dir(path, field: str) -> None:
    """Refuse an --out directory that cannot be made: the path or one of its parents is a file, or the nearest
    existing parent is not writable."""
    p = Path(path).absolute()
    if p.exists() and not p.is_dir():
        raise InputError("exists and is not a directory", field=field, file=str(p))
    ancestor = p if p.exists() else p.parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise InputError(f"{ancestor} is a file, not a directory", field=field, file=str(p))
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise InputError(f"cannot write in {ancestor}", field=field, file=str(p))
