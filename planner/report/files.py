"""Writing user files atomically (a crash or Ctrl-C never leaves a partial file behind): single files, and a
plan's tables as CSV and Parquet with the whole plan as plan.json."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write(path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it over ``path``. The file gets the
    permissions a plain ``open`` would give it (0666 less the umask), not mkstemp's 0600."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=os.path.basename(path))
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


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
    from planner.report.render import to_json

    d = plan.to_dict()
    if reason:
        d["reason"] = reason
    return to_json(d)


def write_files(plan, out: Path, reason: str | None = None) -> None:
    """Write every table as CSV and Parquet and the whole plan as plan.json into a fresh temporary directory
    beside ``out``, then swap it in with renames: a crash or Ctrl-C leaves either the old directory or the new
    one, never a mix. Files of the old directory that the plan does not write are kept."""
    import shutil

    out = out.resolve()
    if out.exists() and not out.is_dir():
        from planner.errors import InputError

        raise InputError("exists and is not a directory", field="--out", file=str(out))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.new.", dir=out.parent))
    try:
        for name in ("fleet", "allocation", "workloads", "alternatives", "tiers"):
            df = getattr(plan, name)
            if df is None:
                continue
            spreadsheet_safe(df).write_csv(tmp / f"{name}.csv")
            df.write_parquet(tmp / f"{name}.parquet")
        (tmp / "plan.json").write_text(plan_json(plan, reason) + "\n", encoding="utf-8")
        if out.exists():
            for f in out.iterdir():  # keep what the old directory had beyond the plan's own files
                if not (tmp / f.name).exists():
                    (shutil.copytree if f.is_dir() else shutil.copy2)(f, tmp / f.name)
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
            os.replace(out, old / out.name)
            os.replace(tmp, out)
            shutil.rmtree(old)
        else:
            os.replace(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def check_output_file(path, field: str, inputs=()) -> None:
    """Refuse, before any work, an output file that cannot or must not be written: an existing path that is not a
    regular file (a device, a directory), one of the command's input files, or a path whose directory is missing or
    not writable. Raises InputError naming the option."""
    from planner.errors import InputError

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
    from planner.errors import InputError

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
