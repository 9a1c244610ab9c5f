"""Property test of the defensive readers (issue 28): random and mutated result files, measurement tables and
plan files, thrown at every importer, at the table's reader and at ``planner check``, through the library and
the CLI. Whatever the bytes, the answer is rows (exit 0), an InputError naming the file (exit 2) or, for a plan,
failed checks (exit 4): never a traceback, and an error is one ``error:`` line.

The mutations start from the real files in tests/data/: a key dropped, a value's type swapped, the bytes cut
short, the document nested deep, bytes that are not UTF-8, the document made a list or a scalar. A seeded
generator makes each run the same."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.errors import InputError
from planner.measurements.importers import READERS, import_results
from planner.measurements.table import read_measurements

DATA = Path(__file__).resolve().parent / "data"
RESULTS = {"vllm": ["vllm-serve-2026.json", "vllm-benchmark-serving-0.8.json"],
           "sglang": ["sglang-bench-serving.jsonl"],
           "genai-perf": ["genai-perf-0.0.15.json", "genai-perf-0.0.12.json", "aiperf-0.1.1.json"]}
SWAPS = [None, "", "abc", "1e999", "nan", -1, 0, 0.0, 1e308, -1e-300, True, False, [], [1, 2], {}, {"avg": "x"},
         "20260310", "2026-13-45", "\udcff", 2 ** 70]
SEED = 20261203


# ---- mutations --------------------------------------------------------------------------------------------------
def _paths(doc, limit: int = 12):
    """Every (container, key) in a parsed document, down to ``limit`` levels."""
    out, stack = [], [(doc, 0)]
    while stack:
        node, depth = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
        for k, v in items:
            out.append((node, k))
            if depth < limit:
                stack.append((v, depth + 1))
    return out


def _nest(value, depth: int):
    for _ in range(depth):
        value = {"a": value} if depth % 2 else [value]
    return value


def mutate_doc(doc, rnd: random.Random):
    """The parsed document with one to three structural changes."""
    doc = copy.deepcopy(doc)
    nested = False
    for _ in range(rnd.randint(1, 3)):
        spots = _paths(doc)
        if not spots:
            break
        parent, key = rnd.choice(spots)
        move = rnd.random()
        if move < 0.3 and isinstance(parent, dict):
            del parent[key]
        elif move < 0.8:
            parent[key] = copy.deepcopy(rnd.choice(SWAPS))
        elif move < 0.9 and not nested:  # once: deeper still is the bytes' mutation
            parent[key], nested = _nest(parent[key], rnd.choice([70, 500])), True
        else:
            parent[key] = [parent[key], rnd.choice(SWAPS)]
    return doc


def mutate_bytes(raw: bytes, rnd: random.Random) -> bytes:
    """The file's bytes cut, spliced with bytes that are not UTF-8, wrapped deep, or replaced."""
    move = rnd.randrange(7)
    if move == 0:
        return raw[:rnd.randrange(len(raw) + 1)]
    if move == 1:
        at = rnd.randrange(len(raw) + 1)
        return raw[:at] + rnd.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\x00", b"\xfe\xff"]) + raw[at:]
    if move == 2:
        n = rnd.choice([100, 5000, 200000])
        return b"[" * n + raw + b"]" * n
    if move == 3:
        return bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 400)))
    if move == 4:
        return rnd.choice([b"", b"null", b"42", b'"text"', b"[]", b"[1, 2]", b"{}", b"[[]]", b"Infinity", b"\n\n"])
    if move == 5:
        return b"\n".join([raw.replace(b"\n", b" ")] * rnd.randint(2, 4))  # JSONL of copies
    return raw.replace(b"1", b"-", rnd.randint(1, 5))


def mutants(raw: bytes, rnd: random.Random, n: int):
    """``n`` mutated versions of a JSON or JSONL file's bytes."""
    try:
        docs = [json.loads(raw)]
    except ValueError:
        docs = [json.loads(line) for line in raw.splitlines() if line.strip()]
    for i in range(n):
        if i % 2:
            yield mutate_bytes(raw, rnd)
        else:
            mutated = [mutate_doc(d, rnd) for d in docs]
            yield ("\n".join(json.dumps(d) for d in mutated) if len(docs) > 1 else json.dumps(mutated[0])).encode(
                "utf-8", "surrogatepass")


# ---- what every answer must look like ---------------------------------------------------------------------------
def assert_clean(res, codes=(0, 2)):
    """No traceback: the exit code is one the interface names, and an error is one ``error:`` line."""
    assert res.exception is None or isinstance(res.exception, SystemExit), (
        f"traceback: {type(res.exception).__name__}: {res.exception}")
    assert res.exit_code in codes, (res.exit_code, res.stderr)
    if res.exit_code:
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr


IMPORT = ["-H", "hgx-h100", "-m", "llama-3.1-8b", "--precision", "fp8", "--chips", "1", "--format", "json"]


@pytest.mark.parametrize("tool", list(READERS))
def test_mutated_result_files_never_traceback(tool, tmp_path):
    rnd = random.Random(f"{SEED}-{tool}")
    runner = CliRunner()
    seen = {0: 0, 2: 0}
    for name in RESULTS[tool]:
        raw = (DATA / "results" / name).read_bytes()
        for i, data in enumerate(mutants(raw, rnd, 40)):
            path = tmp_path / f"{i}-{name}"
            path.write_bytes(data)
            try:  # the library: rows or an InputError naming the file
                import_results(path, tool, "hgx-h100", "llama-3.1-8b", "fp8", 1)
            except InputError as exc:
                assert str(path) in str(exc), exc
            res = runner.invoke(main, ["measurements", "import", str(path), "--from", tool, *IMPORT])
            assert_clean(res)
            seen[res.exit_code] += 1
    assert seen[0] and seen[2], seen  # the mutations reach both answers


TABLE = DATA / "measurements"


@pytest.mark.parametrize("suffix", [".csv", ".yaml", ".json"])
def test_mutated_measurement_tables_never_traceback(suffix, tmp_path):
    import yaml

    rnd = random.Random(f"{SEED}-{suffix}")
    rows = [r.to_row() for r in read_measurements(TABLE / "h100-h200-llama8b.csv")]
    for i in range(60):
        doc = mutate_doc({"measurements": rows}, rnd).get("measurements", []) if i % 2 == 0 else rows
        if not isinstance(doc, list):
            doc = [doc]
        if suffix == ".csv":
            import csv
            import io

            buf = io.StringIO()
            keys = sorted({k for r in doc if isinstance(r, dict) for k in r})
            writer = csv.DictWriter(buf, fieldnames=keys or ["x"], extrasaction="ignore")
            writer.writeheader()
            writer.writerows(r if isinstance(r, dict) else {} for r in doc)
            raw = buf.getvalue().encode("utf-8", "surrogatepass")
        elif suffix == ".yaml":
            try:
                raw = yaml.safe_dump({"measurements": doc}, allow_unicode=False).encode()
            except RecursionError:  # too deep for the dumper: JSON is YAML too
                raw = json.dumps({"measurements": doc}, default=str).encode()
        else:
            raw = json.dumps(doc, default=str).encode("utf-8", "surrogatepass")
        if i % 2:
            raw = mutate_bytes(raw, rnd)
        path = tmp_path / f"rows-{i}{suffix}"
        path.write_bytes(raw)
        try:
            read_measurements(path)
        except InputError as exc:
            assert str(path) in str(exc), exc
    deep = tmp_path / f"deep{suffix}"
    deep.write_bytes(b"[" * 100000 + b"]" * 100000)
    with pytest.raises(InputError, match="nested" if suffix != ".csv" else "not readable CSV"):
        read_measurements(deep)


# ---- planner check ----------------------------------------------------------------------------------------------
CHECK_SCENARIO = """
name: fuzz-check
start_date: 2027-01-01
horizon_years: 4
finance: {wacc: 0.08, electricity_usd_per_mwh: 70, pue: 1.25}
hardware: {allow: [hgx-h200, hgx-h100]}
workloads:
  - {name: chat, model: llama-3.1-8b, requests_per_s: 40, input_tokens: 1000, output_tokens: 300, tier: standard,
     ttft_s: 1.0}
"""


@pytest.mark.integration
def test_mutated_plan_files_never_traceback(tmp_path):
    from planner.fleet.check import check
    from planner.fleet.solve import solve
    from planner.scenario import scenario_from_yaml

    plan = solve(scenario_from_yaml(CHECK_SCENARIO)).to_dict()
    raw = json.dumps(plan).encode()
    rnd = random.Random(f"{SEED}-check")
    runner = CliRunner()
    for i, data in enumerate(mutants(raw, rnd, 40)):
        path = tmp_path / f"plan-{i}.json"
        path.write_bytes(data)
        try:
            check(path)
        except InputError as exc:
            assert str(path) in str(exc), exc
        assert_clean(runner.invoke(main, ["check", str(path)]), codes=(0, 2, 4))
