"""Reading request traces: the Azure LLM inference CSV, the Mooncake JSONL, and a generic CSV or Parquet table,
each optionally gzip-compressed, into one `Trace` of numpy arrays. Every fault in a user's file is an InputError
naming the file, the line (1-based, one row per line) where known, the field and what was expected."""

from __future__ import annotations

import functools
import gzip
import io
import json
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from planner import yaml_io
from planner.errors import InputError
from planner.inputs import read_bytes_limited

TRACES_DIR = Path(__file__).resolve().parent.parent / "data" / "traces"
MAX_TRACE_BYTES = 256 * 1024 * 1024  # on disk and after decompression: a week of Azure code traffic cut to size fits
BLOCK_TOKENS = 512  # Mooncake's prefix block: FAST25-release/README.md, "The block size is 512 tokens"
FORMATS = ("azure-csv", "mooncake-jsonl", "csv", "parquet")
AZURE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
GENERIC_COLUMNS = ("arrival_s", "input_tokens", "output_tokens")
GENERIC_OPTIONAL = ("session", "prefix_hit_tokens")
MOONCAKE_FIELDS = ("timestamp", "input_length", "output_length")
# what a value may be: (least, most, the words for it); the scenario takes at most 1e8 tokens a request
TOKENS = (1.0, 1e8, "a number of tokens from 1 to 1e8")
CACHED = (0.0, 1e8, "a number of tokens from 0 to 1e8")
SECONDS = (0.0, 1e10, "seconds from 0 to 1e10")
MILLISECONDS = (0.0, 1e13, "milliseconds from 0 to 1e13")
EXPECTED = "a request trace (Azure LLM inference CSV, Mooncake JSONL, or CSV/Parquet with columns " \
           "arrival_s, input_tokens, output_tokens), optionally .gz"


@dataclass(frozen=True)
class Trace:
    """Requests in arrival order. Arrays are float64 and read-only; ``arrival_s`` starts at 0 and never decreases;
    ``cached_tokens`` are the prompt tokens whose prefix blocks an earlier request of the trace already held (zero
    where the format does not say)."""

    name: str
    source: str
    arrival_s: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    cached_tokens: np.ndarray
    session: np.ndarray | None = None
    notes: tuple[str, ...] = ()

    @property
    def requests(self) -> int:
        return int(self.arrival_s.size)

    @property
    def duration_s(self) -> float:
        return float(self.arrival_s[-1]) if self.arrival_s.size else 0.0


@functools.lru_cache(maxsize=1)
def shipped_traces() -> dict[str, dict]:
    """The traces shipped in planner/data/traces/traces.yaml, by name (source, licence, window, rows)."""
    data = yaml_io.load_trusted(TRACES_DIR / "traces.yaml")
    return {entry["name"]: entry for entry in data["traces"]}


def read_trace(name_or_path, *, format: str | None = None, block_tokens: int | None = None,
               max_bytes: int = MAX_TRACE_BYTES) -> Trace:
    """A shipped trace by name (``shipped_traces()``) or a trace file by path. ``format`` is one of FORMATS; by
    default it follows the name (.jsonl: Mooncake, .parquet, .csv: Azure or generic by its header). ``block_tokens``
    is the Mooncake prefix block size (default 512)."""
    entry = shipped_traces().get(str(name_or_path))
    if entry is not None:
        path, name = TRACES_DIR / entry["file"], entry["name"]
        src = entry["source"]
        source = f"{src['repo']}:{src['path']}@{src['commit'][:12]}, {entry['licence']}"
        format = format or entry["format"]
        block_tokens = block_tokens or entry.get("block_tokens")
    else:
        path = Path(name_or_path)
        name, source = _stem(path), str(path)
    if format is not None and format not in FORMATS:
        raise InputError(f"unknown trace format {format!r}; expected one of {', '.join(FORMATS)}", field="format")
    if block_tokens is not None and not (isinstance(block_tokens, int) and block_tokens >= 1):
        raise InputError(f"expected a whole number of tokens >= 1, got {block_tokens!r}", field="block_tokens")
    file = str(path)
    raw = _decompressed(read_bytes_limited(path, max_bytes, _expected_here(path)), file, max_bytes)
    columns = _parse(raw, format or _format_of(path, raw), file, block_tokens or BLOCK_TOKENS)
    return _trace(name, source, file, **columns)


def _expected_here(path: Path) -> str:
    names = ", ".join(shipped_traces())
    return f"{EXPECTED}, or a shipped trace name ({names})"


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".csv", ".jsonl", ".ndjson", ".json", ".parquet"):
        name = name[: -len(suffix)] if name.lower().endswith(suffix) else name
    return name or path.name


def _decompressed(raw: bytes, file: str, limit: int) -> bytes:
    """gzip-compressed bytes (by their magic number) inflated, at most ``limit`` bytes (a small file may hold a
    huge one); other bytes as they are."""
    if not raw.startswith(b"\x1f\x8b"):
        return raw
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as fh:
            out = fh.read(limit + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"is not a readable gzip file ({exc}); expected {EXPECTED}", file=file) from None
    if len(out) > limit:
        raise InputError(f"inflates to more than {limit} bytes; expected {EXPECTED}", file=file)
    return out


def _format_of(path: Path, raw: bytes) -> str:
    """The format a file's name (then its first bytes) says; a CSV's header decides Azure or generic later."""
    name = path.name.lower().removesuffix(".gz")
    if name.endswith(".parquet") or raw.startswith(b"PAR1"):
        return "parquet"
    if name.endswith((".jsonl", ".ndjson", ".json")) or raw.lstrip()[:1] == b"{":
        return "mooncake-jsonl"
    return "csv"


def _parse(raw: bytes, format: str, file: str, block_tokens: int) -> dict:
    if format == "parquet":
        return _generic_columns(_parquet_frame(raw, file), file, None)
    text = _text(raw, file)
    if format == "mooncake-jsonl":
        return _mooncake_columns(text, file, block_tokens)
    frame, lines = _csv_frame(text, file)
    if format == "azure-csv" or (format == "csv" and _is_azure(frame.columns)):
        return _azure_columns(frame, file, lines)
    return _generic_columns(frame, file, lines)


def _text(raw: bytes, file: str) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(f"byte {raw[exc.start]:#04x} is not UTF-8 text; expected {EXPECTED}", file=file,
                         line=line) from None


def _is_azure(columns) -> bool:
    return set(AZURE_COLUMNS) <= {c.strip() for c in columns}


def _polars_failure(exc: BaseException) -> bool:
    """Polars raises its own errors, OSError, or (on some corrupt input) a Rust panic, which derives from
    BaseException: all mean the bytes are not a table; interrupts are not."""
    return not isinstance(exc, (KeyboardInterrupt, SystemExit, GeneratorExit))


def _csv_frame(text: str, file: str) -> tuple[pl.DataFrame, np.ndarray]:
    """The CSV as strings (we convert and check each column ourselves) and each row's 1-based line number, blank
    lines dropped."""
    lines = text.splitlines()
    header = next((i for i, ln in enumerate(lines) if ln.strip()), None)
    if header is None:
        raise InputError(f"is empty; expected {EXPECTED}", file=file)
    try:
        frame = pl.read_csv(io.StringIO(text), infer_schema=False)
    except BaseException as exc:  # noqa: BLE001 - see _polars_failure
        if not _polars_failure(exc):
            raise
        ragged = _ragged_line(lines, header)
        if ragged is not None:
            raise InputError(f"has {ragged[1]} fields, the header's {ragged[2]}; expected one value a column",
                             file=file, line=ragged[0]) from None
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise InputError(f"is not a CSV table ({first}); expected {EXPECTED}", file=file) from None
    frame = frame.rename({c: c.strip() for c in frame.columns})
    # polars reads a blank line as a row of nulls; lines are numbered from the header (leading blanks skipped)
    row_lines = np.arange(frame.height) + header + 2
    blank = frame.select(pl.all_horizontal(pl.all().is_null())).to_series().to_numpy() if frame.width else None
    if blank is not None and blank.any():
        frame, row_lines = frame.filter(~pl.Series(blank)), row_lines[~blank]
    return frame, row_lines


def _ragged_line(lines: list[str], header: int) -> tuple[int, int, int] | None:
    """The first line (1-based) with more fields than the header, its count and the header's (quotes not
    parsed: a hint for the usual fault, a row with an extra comma)."""
    width = lines[header].count(",") + 1
    for i in range(header + 1, len(lines)):
        if lines[i].count(",") + 1 > width:
            return i + 1, lines[i].count(",") + 1, width
    return None


def _parquet_frame(raw: bytes, file: str) -> pl.DataFrame:
    try:
        return pl.read_parquet(io.BytesIO(raw))
    except BaseException as exc:  # noqa: BLE001 - see _polars_failure
        if not _polars_failure(exc):
            raise
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise InputError(f"is not a Parquet table ({first}); expected {EXPECTED}", file=file) from None


def _require(frame: pl.DataFrame, columns, file: str, line) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        have = ", ".join(frame.columns) or "none"
        raise InputError(f"missing column (columns found: {have}); expected columns {', '.join(columns)}",
                         file=file, line=None if line is None else 1, field=missing[0])
    if frame.height == 0:
        raise InputError(f"has a header but no requests; expected {EXPECTED}", file=file)


def _numbers(series: pl.Series, field: str, file: str, lines, allowed: tuple) -> np.ndarray:
    """A column as float64, or InputError at the first value that is missing, not a number, or outside
    ``allowed`` (least, most, words)."""
    least, most, what = allowed
    where = field if lines is not None else f"{field} (row 1)"
    try:
        values = series.cast(pl.Float64, strict=False).to_numpy().astype(np.float64)
    except BaseException as exc:  # noqa: BLE001 - a column of lists or structs does not cast
        if not _polars_failure(exc):
            raise
        raise InputError(f"expected {what}, got a column of {series.dtype}", file=file,
                         line=None if lines is None else int(lines[0]), field=where) from None
    bad = np.isnan(values) | (values < least) | (values > most)
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(f"expected {what}, got {_shown(series[i])}", file=file,
                         line=None if lines is None else int(lines[i]),
                         field=field if lines is not None else f"{field} (row {i + 1})")
    return values


def _shown(value) -> str:
    if value is None:
        return "nothing"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _azure_columns(frame: pl.DataFrame, file: str, lines) -> dict:
    _require(frame, AZURE_COLUMNS, file, lines)
    stamps = frame["TIMESTAMP"].str.strip_chars()
    try:
        parsed = stamps.str.to_datetime(strict=False, time_unit="ns")
    except BaseException as exc:  # noqa: BLE001 - polars cannot infer a date format from the first value
        if not _polars_failure(exc):
            raise
        parsed = pl.Series([None] * stamps.len(), dtype=pl.Datetime("ns"))
    if parsed.null_count():
        i = int(np.argmax(parsed.is_null().to_numpy()))
        raise InputError(f"expected a date and time such as 2023-11-16 18:17:03.979960, got {_shown(stamps[i])}",
                         file=file, line=int(lines[i]), field="TIMESTAMP")
    ns = parsed.dt.epoch("ns").to_numpy().astype(np.int64)
    return {
        "arrival": (ns - ns.min()).astype(np.float64) / 1e9,  # offsets before float64: epoch ns lose precision
        "inputs": _numbers(frame["ContextTokens"], "ContextTokens", file, lines, TOKENS),
        "outputs": _numbers(frame["GeneratedTokens"], "GeneratedTokens", file, lines, TOKENS),
        "cached": None, "hashes": None, "session": None, "lines": lines,
    }


def _generic_columns(frame: pl.DataFrame, file: str, lines) -> dict:
    """``lines``: the CSV's row line numbers, or None for Parquet (its rows are named instead)."""
    _require(frame, GENERIC_COLUMNS, file, lines)
    inputs = _numbers(frame["input_tokens"], "input_tokens", file, lines, TOKENS)
    cached = None
    if "prefix_hit_tokens" in frame.columns:
        cached = _numbers(frame["prefix_hit_tokens"], "prefix_hit_tokens", file, lines, CACHED)
        over = cached > inputs
        if over.any():
            i = int(np.argmax(over))
            raise InputError(f"expected at most the row's input_tokens ({inputs[i]:g}), got {cached[i]:g}",
                             file=file, line=None if lines is None else int(lines[i]),
                             field="prefix_hit_tokens" if lines is not None else f"prefix_hit_tokens (row {i + 1})")
    session = None
    if "session" in frame.columns:
        session = frame["session"].cast(pl.String, strict=False).to_numpy()
        missing = np.array([s is None for s in session])
        if missing.any():
            i = int(np.argmax(missing))
            raise InputError("expected a session id, got nothing", file=file,
                             line=None if lines is None else int(lines[i]),
                             field="session" if lines is not None else f"session (row {i + 1})")
    return {
        "arrival": _numbers(frame["arrival_s"], "arrival_s", file, lines, SECONDS),
        "inputs": inputs,
        "outputs": _numbers(frame["output_tokens"], "output_tokens", file, lines, TOKENS),
        "cached": cached, "hashes": None, "session": session, "lines": lines,
    }


def _mooncake_columns(text: str, file: str, block_tokens: int) -> dict:
    """One JSON object a line: timestamp (ms), input_length, output_length, hash_ids (prefix block hashes)."""
    stamps, inputs, outputs, hashes, lines = [], [], [], [], []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (ValueError, RecursionError) as exc:  # JSONDecodeError; ints of over 4300 digits; deep nesting
            msg = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc).split(";")[0] or "nested too deeply"
            raise InputError(f"not JSON ({msg}); expected one JSON object a line", file=file, line=number) from None
        if not isinstance(row, dict):
            raise InputError(f"expected a JSON object, got {type(row).__name__}", file=file, line=number)
        stamps.append(_json_number(row, "timestamp", file, number, MILLISECONDS))
        inputs.append(_json_number(row, "input_length", file, number, TOKENS))
        outputs.append(_json_number(row, "output_length", file, number, TOKENS))
        hashes.append(_hash_ids(row, file, number))
        lines.append(number)
    if not lines:
        raise InputError(f"is empty; expected {EXPECTED}", file=file)
    return {
        "arrival": np.asarray(stamps, dtype=np.float64) / 1e3,
        "inputs": np.asarray(inputs, dtype=np.float64), "outputs": np.asarray(outputs, dtype=np.float64),
        "cached": None, "hashes": (hashes, block_tokens), "session": None, "lines": np.asarray(lines),
    }


def _json_number(row: dict, field: str, file: str, line: int, allowed: tuple) -> float:
    least, most, what = allowed
    value = row.get(field)
    # bool is an int to Python; an int past float range is neither finite nor in range
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not (number and least <= value <= most):  # NaN fails both comparisons
        got = "nothing" if field not in row else _shown(value)
        raise InputError(f"expected {what}, got {got}", file=file, line=line, field=field)
    return float(value)


def _hash_ids(row: dict, file: str, line: int) -> tuple:
    value = row.get("hash_ids", [])
    if not isinstance(value, list) or not all(isinstance(h, (int, str)) and not isinstance(h, bool) for h in value):
        raise InputError(f"expected a list of block hash ids (integers), got {_shown(value)}", file=file, line=line,
                         field="hash_ids")
    return tuple(value)


def _cached_from_hashes(hashes, inputs: np.ndarray, block_tokens: int) -> np.ndarray:
    """Prompt tokens an unbounded prefix cache would hold, request by request in arrival order: the leading run of
    the request's block hashes that earlier requests produced, times the block size, at most its prompt. A hash
    names a block and everything before it, so reuse stops at the first unseen block."""
    seen: set = set()
    cached = np.zeros(len(hashes))
    for i, ids in enumerate(hashes):
        run = 0
        for h in ids:
            if h not in seen:
                break
            run += 1
        cached[i] = min(run * block_tokens, inputs[i])
        seen.update(ids)
    return cached


def _trace(name: str, source: str, file: str, *, arrival, inputs, outputs, cached, hashes, session, lines) -> Trace:
    """Sorted by arrival (stable: ties keep file order), shifted to start at 0, frozen."""
    if arrival.size == 0:
        raise InputError(f"has no requests; expected {EXPECTED}", file=file)
    notes = []
    late = int(np.count_nonzero(np.diff(arrival) < 0))
    if late:
        order = np.argsort(arrival, kind="stable")
        arrival, inputs, outputs = arrival[order], inputs[order], outputs[order]
        cached = None if cached is None else cached[order]
        session = None if session is None else session[order]
        hashes = None if hashes is None else ([hashes[0][i] for i in order], hashes[1])
        notes.append(f"{late} request(s) arrived before the row above them; the trace is sorted by arrival")
    if hashes is not None:
        cached = _cached_from_hashes(hashes[0], inputs, hashes[1])
    if cached is None:
        cached = np.zeros_like(inputs)
    arrays = [arrival - arrival[0], inputs, outputs, cached]
    for a in arrays:
        a.setflags(write=False)
    if session is not None:
        session.setflags(write=False)
    return Trace(name, source, *arrays, session=session, notes=tuple(notes))
