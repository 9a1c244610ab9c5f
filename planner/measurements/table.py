"""The measurement table (docs/INTERFACE.md 7.10): one row per measured operating point of one replica, read from
CSV, Parquet, YAML or JSON files or given inline in a scenario, each row validated with errors that name the file,
the row and the field.

A row says what was run (``hardware``, ``model``, ``precision``, ``chips`` per replica and optionally its layout),
how (``role``, ``input_tokens``, ``output_tokens``, ``concurrency`` per replica, ``speculative``) and what came out
(``tps_per_user`` or ``tpot_s``, ``output_tokens_per_s`` for the replica, ``input_tokens_per_s`` for a prefill
replica, ``ttft_s`` at ``ttft_percentile``), with its ``source`` and ``date``.
"""

from __future__ import annotations

import csv
import datetime as _dt
import json
import math
from pathlib import Path
from typing import Annotated, Literal, get_args

from annotated_types import Ge, Gt, Lt
from pydantic import AllowInfNan, BaseModel, ConfigDict, Field, Strict, ValidationError, model_validator

from planner import yaml_io
from planner.errors import InputError
from planner.measurements.reading import read_text
from planner.vocabulary import PRECISIONS, SPECULATIVE_METHODS
from planner.writing import atomic_write

PosNumber = Annotated[float, Strict(), AllowInfNan(False), Gt(0)]
PosCount = Annotated[int, Strict(), Ge(1)]
Percentile = Annotated[float, Strict(), AllowInfNan(False), Gt(0), Lt(100)]
Text = Annotated[str, Strict(), Field(min_length=1)]

MEASURED_ROLES: tuple[str, ...] = ("colocated", "decode", "prefill")
# The fields' words as Literal types (a type checker reads no Literal of a tuple), held equal to the tuples
MeasuredPrecision = Literal["fp4", "fp8", "bf16", "w4a16"]
MeasuredRole = Literal["colocated", "decode", "prefill"]
MeasuredSpeculative = Literal["none", "mtp", "eagle", "draft_model"]
assert (get_args(MeasuredPrecision), get_args(MeasuredRole), get_args(MeasuredSpeculative)) == (
    PRECISIONS, MEASURED_ROLES, SPECULATIVE_METHODS)
SUFFIXES: tuple[str, ...] = (".csv", ".parquet", ".yaml", ".yml", ".json")


class Measurement(BaseModel):
    """One measured operating point of one replica."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    hardware: Text = Field(description="hardware id (catalog or the scenario's hardware.custom)")
    model: Text = Field(description="model id (catalog or the scenario's models)")
    precision: MeasuredPrecision = Field(description="serving precision of the weights")
    chips: PosCount = Field(description="chips per replica")
    tensor_parallel: PosCount | None = Field(None, description="tensor-parallel degree (default: chips / "
                                             "pipeline_parallel)")
    pipeline_parallel: PosCount | None = Field(None, description="pipeline stages (default 1)")
    expert_parallel: bool = Field(False, description="experts spread over the tensor-parallel chips")
    role: MeasuredRole = Field("colocated", description="colocated: one server prefills and decodes its "
                                         "own requests (what vllm/sglang bench serve measure); decode: decode only; "
                                         "prefill: prefill only")
    input_tokens: PosNumber = Field(description="mean prompt tokens per request")
    output_tokens: PosNumber = Field(description="mean output tokens per request")
    concurrency: Annotated[float, Strict(), AllowInfNan(False), Ge(1)] = Field(description="requests in flight on the replica (the benchmark's max concurrency "
                                   "divided by the replicas it ran on)")
    tps_per_user: PosNumber | None = Field(None, description="output tokens/s one request sees (1 / TPOT); give "
                                           "this or tpot_s")
    tpot_s: PosNumber | None = Field(None, description="time per output token after the first, in seconds")
    output_tokens_per_s: PosNumber | None = Field(None, description="the replica's output tokens/s (colocated, "
                                                  "decode)")
    input_tokens_per_s: PosNumber | None = Field(None, description="the replica's prompt tokens/s (prefill; "
                                                 "optional otherwise)")
    ttft_s: PosNumber | None = Field(None, description="time to first token at ttft_percentile, in seconds")
    ttft_percentile: Percentile | None = Field(None, description="the percentile of ttft_s (50 = median)")
    speculative: MeasuredSpeculative = Field("none", description="speculative decoding during the run")
    source: str | None = Field(None, description="where the row comes from (a file, a tool and its version)")
    date: _dt.date | None = Field(None, description="when it was measured")

    @model_validator(mode="after")
    def _consistent(self) -> Measurement:
        if (self.tps_per_user is None) == (self.tpot_s is None):
            raise ValueError("give exactly one of tps_per_user and tpot_s")
        if self.role in ("colocated", "decode") and self.output_tokens_per_s is None:
            raise ValueError(f"role {self.role} needs output_tokens_per_s (the replica's output tokens/s)")
        if self.role == "prefill" and (self.input_tokens_per_s is None or self.ttft_s is None):
            raise ValueError("role prefill needs input_tokens_per_s (the replica's prompt tokens/s) and ttft_s")
        if (self.ttft_s is None) != (self.ttft_percentile is None):
            raise ValueError("ttft_s and ttft_percentile come together (the percentile the TTFT was read at)")
        if self.tensor_parallel is not None or self.pipeline_parallel is not None:
            tp, pp = self.layout()[:2]
            if tp * pp != self.chips:
                raise ValueError(f"tensor_parallel x pipeline_parallel = {tp} x {pp} is not chips = {self.chips}")
        return self

    @property
    def speed(self) -> float:
        """Output tokens/s per user."""
        if self.tps_per_user is not None:
            return float(self.tps_per_user)
        assert self.tpot_s is not None  # the row's validator asks for exactly one of the two
        return float(1.0 / self.tpot_s)

    def layout(self) -> tuple[int, int, bool]:
        """(tensor, pipeline, expert parallel): as given, else all chips in tensor parallel."""
        pp = self.pipeline_parallel or (self.chips // self.tensor_parallel if self.tensor_parallel else 1)
        tp = self.tensor_parallel or max(self.chips // pp, 1)
        return int(tp), int(pp), bool(self.expert_parallel)

    def to_row(self) -> dict:
        """The row as plain JSON values, every field present."""
        return self.model_dump(mode="json")


FIELDS: tuple[str, ...] = tuple(Measurement.model_fields)


def measurement_schema() -> dict:
    """JSON Schema (draft 2020-12) of one row."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **Measurement.model_json_schema()}


# ---- validation with clear errors -----------------------------------------------------------------------------
def _error_text(exc: ValidationError) -> tuple[str | None, str]:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"]) or None
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        msg = f"unknown field; expected one of {', '.join(FIELDS)}"
    elif err["type"] == "missing":
        msg = "missing (required)"
    elif "input" in err and loc:
        got = repr(err["input"])
        msg = f"{msg} (got {got if len(got) <= 60 else got[:57] + '...'})"
    return loc, msg


def measurement_of(row, where: str, file: str | None = None, line: int | None = None) -> Measurement:
    """One validated row; a bad one raises InputError naming ``where`` (``measurements[2]``, ``row 3``) and the
    field."""
    if isinstance(row, Measurement):
        return row
    if not isinstance(row, dict):
        raise InputError(f"expected a mapping of measurement fields ({', '.join(FIELDS[:6])}, ...), got "
                         f"{type(row).__name__}", file=file, line=line, field=where)
    clean = {k: v for k, v in row.items() if v is not None and not (isinstance(v, float) and math.isnan(v))}
    try:
        return Measurement.model_validate(clean)
    except ValidationError as exc:
        loc, msg = _error_text(exc)
        raise InputError(msg, file=file, line=line, field=f"{where}.{loc}" if loc else where) from None


# ---- files --------------------------------------------------------------------------------------------------
def _cell(text: str):
    """A CSV cell as the value it spells: empty = missing, true/false, an integer, a number, else the text."""
    text = text.strip()
    if text == "":
        return None
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _csv_rows(path: Path) -> list[tuple[int, dict]]:
    import io

    from planner.measurements.reading import MAX_ROWS, row_cap

    text = read_text(path, "a CSV file of measurement rows")
    rows = []
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        if not reader.fieldnames:
            raise InputError("is empty; expected a header line of measurement fields", file=str(path))
        for n, r in enumerate(reader):
            if n >= MAX_ROWS:
                row_cap(n + 1, path)
            rows.append((n + 2, {k.strip(): _cell(v if isinstance(v, str) else "") for k, v in r.items()
                                 if isinstance(k, str)}))
    except csv.Error as exc:
        raise InputError(f"is not readable CSV ({exc})", file=str(path), line=reader.line_num or None) from None
    return rows


def _parquet_rows(path: Path) -> list[tuple[int, dict]]:
    import io

    import polars as pl

    from planner.inputs import read_bytes_limited
    from planner.measurements.reading import MAX_FILE_BYTES, MAX_ROWS, row_cap

    raw = read_bytes_limited(path, MAX_FILE_BYTES, "a Parquet file of measurement rows")
    try:
        df = pl.read_parquet(io.BytesIO(raw), n_rows=MAX_ROWS + 1)
    except Exception as exc:  # noqa: BLE001 - polars raises several kinds for a file that is not Parquet
        raise InputError(f"cannot be read as Parquet ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})",
                         file=str(path)) from None
    row_cap(len(df), path)
    return [(n + 1, r) for n, r in enumerate(df.to_dicts())]


def _document_rows(path: Path) -> list[tuple[int, dict]]:
    from planner.measurements.reading import deep_error, row_cap, too_deep

    json_file = path.suffix.lower() == ".json"
    expected = f"a {'JSON' if json_file else 'YAML'} file of measurement rows"
    text = read_text(path, expected)
    if not json_file:  # the project's one YAML reader: line-accurate errors, size and depth guards
        data, _ = yaml_io.parse(text, str(path), expected)
    else:
        try:
            data = json.loads(text)
        except RecursionError:
            raise deep_error(path) from None
        except ValueError as exc:
            raise InputError(f"cannot be parsed ({(str(exc).splitlines() or [type(exc).__name__])[0]})",
                             file=str(path)) from None
    if too_deep(data):
        raise deep_error(path)
    if isinstance(data, dict) and "measurements" in data:
        data = data["measurements"]
    if not isinstance(data, list):
        raise InputError("expected a list of measurement rows (or a mapping with a measurements: list)",
                         file=str(path))
    row_cap(len(data), path)
    return [(n + 1, r) for n, r in enumerate(data)]


READERS = {".csv": _csv_rows, ".parquet": _parquet_rows, ".yaml": _document_rows, ".yml": _document_rows,
           ".json": _document_rows}


def read_measurements(path: str | Path) -> list[Measurement]:
    """Every row of a measurement file, validated (InputError names the file, the row and the field)."""
    path = Path(path)
    reader = READERS.get(path.suffix.lower())
    if reader is None:
        raise InputError(f"unknown measurement file type {path.suffix or '(none)'!r}; expected one of "
                         f"{', '.join(SUFFIXES)}", file=str(path))
    if not path.is_file():
        raise InputError("no such file", file=str(path))
    line_based = path.suffix.lower() == ".csv"
    return [measurement_of(r, f"row {n}", str(path), n if line_based else None) for n, r in reader(path)]


def resolve_measurements(entries, base_dir: Path | None) -> list[dict]:
    """A scenario's ``measurements:`` list (paths relative to the scenario, or inline rows) as validated rows."""
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise InputError(f"expected a list of file paths or rows, got {type(entries).__name__}",
                         field="measurements")
    rows: list[dict] = []
    for i, entry in enumerate(entries):
        if isinstance(entry, str):
            path = Path(entry)
            if not path.is_absolute() and base_dir is not None:
                path = base_dir / path
            rows.extend(m.to_row() for m in read_measurements(path))
        else:
            rows.append(measurement_of(entry, f"measurements[{i}]").to_row())
    return rows


def write_measurements(rows: list[Measurement], path: str | Path) -> None:
    """Rows to CSV, Parquet, YAML or JSON by the file's suffix, every field a column (written whole or not at
    all)."""
    path = Path(path)
    suffix = path.suffix.lower()
    data = [m.to_row() for m in rows]
    if suffix not in READERS:
        raise InputError(f"unknown measurement file type {suffix or '(none)'!r}; expected one of "
                         f"{', '.join(SUFFIXES)}", field="--out")
    if suffix == ".parquet":
        import io

        import polars as pl

        out = io.BytesIO()
        pl.DataFrame(data, schema=_polars_schema()).write_parquet(out)
        atomic_write(path, out.getvalue())
        return
    if suffix == ".csv":
        import io

        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(FIELDS), lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: ("" if v is None else v) for k, v in r.items()} for r in data)
        text = buf.getvalue()
    elif suffix == ".json":
        text = json.dumps(data, indent=2) + "\n"
    else:
        import yaml

        text = yaml.safe_dump({"measurements": data}, sort_keys=False)
    atomic_write(path, text.encode())


def _polars_schema() -> dict:
    import polars as pl

    kinds = {"chips": pl.Int64, "tensor_parallel": pl.Int64, "pipeline_parallel": pl.Int64,
             "expert_parallel": pl.Boolean}
    text = {"hardware", "model", "precision", "role", "speculative", "source", "date"}
    return {f: kinds.get(f, pl.Utf8 if f in text else pl.Float64) for f in FIELDS}
