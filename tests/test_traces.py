"""planner.traces: reading traces (the shipped ones, the Azure CSV, the Mooncake JSONL, generic CSV/Parquet) and the
workload fitted to them, against figures computed by hand; hostile files end in an InputError naming the file, the
line and the field. Marked ``unit`` by tests/conftest.py (not in its INTEGRATION set)."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml

from planner.errors import InputError
from planner.traces import (fit_lines, fit_summary, fit_trace, fit_yaml, lognormal_params, read_trace,
                            sample_arrivals, shipped_traces)
from planner.traces.fit import MAX_P99_RATIO, Z99
from planner.traces.read import TRACES_DIR


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def generic_csv(tmp_path, rows, header="arrival_s,input_tokens,output_tokens", name="t.csv") -> Path:
    return write(tmp_path, name, header + "\n" + "".join(",".join(map(str, r)) + "\n" for r in rows))


def mooncake(tmp_path, rows, name="m.jsonl") -> Path:
    return write(tmp_path, name, "".join(json.dumps(r) + "\n" for r in rows))


# --- fits computed by hand ---------------------------------------------------------------------------------------

def test_rate_and_peak_over_a_window(tmp_path):
    # 5 requests over 10 s: 4 gaps, so 0.4 requests/s; [0, 2) holds 4 of them: 2/s, 5x the mean
    path = generic_csv(tmp_path, [(0, 10, 1), (0.5, 20, 2), (1.0, 30, 3), (1.5, 40, 4), (10, 50, 5)])
    fit = fit_trace(read_trace(path), window_s=2.0)
    assert fit.requests == 5 and fit.duration_s == 10.0
    assert fit.requests_per_s == pytest.approx(0.4)
    assert fit.peak_to_mean == pytest.approx(5.0) and fit.peak_start_s == 0.0 and fit.window_s == 2.0
    assert fit.input_tokens.mean == 30 and fit.output_tokens.mean == 3
    assert fit.prefix_cache_hit == 0.0
    # the window is half-open: with 1 s, [0.5, 1.5) holds 2 requests, [0, 1) too: 2/s over 0.4/s
    assert fit_trace(read_trace(path), window_s=1.0).peak_to_mean == pytest.approx(5.0)
    # a window of 0.4 s holds one request: 2.5/s, 6.25x
    assert fit_trace(read_trace(path), window_s=0.4).peak_to_mean == pytest.approx(2.5 / 0.4)


def test_even_arrivals_have_no_peak(tmp_path):
    path = generic_csv(tmp_path, [(t, 100, 10) for t in range(11)])
    fit = fit_trace(read_trace(path), window_s=2.0)
    assert fit.requests_per_s == pytest.approx(1.0) and fit.peak_to_mean == pytest.approx(1.0)


def test_window_longer_than_the_trace_is_the_span(tmp_path):
    fit = fit_trace(read_trace(generic_csv(tmp_path, [(0, 5, 1), (1, 5, 1), (3, 5, 1)])), window_s=60)
    assert fit.window_s == 3.0 and fit.peak_to_mean == 1.0
    assert any("longer than the trace" in n for n in fit.notes)


def test_p99_lognormal_and_table_by_hand(tmp_path):
    # lengths 1..100: mean 50.5; p99 at rank 0.99 * 99 = 98.01 between 99 and 100: 99.01
    path = generic_csv(tmp_path, [(i, i + 1, 7) for i in range(100)])
    fit = fit_trace(read_trace(path))
    length = fit.input_tokens
    assert length.mean == 50.5 and length.p99 == pytest.approx(99.01) and length.p50 == 50.5
    assert length.lognormal == {"mean": 50.5, "p99": 99.0}
    table = np.array(length.table["table"])
    assert 1 < len(table) <= 32 and np.all(np.diff(table[:, 0]) > 0)
    assert table[:, 1].sum() == 100 and table[:, 1] @ table[:, 0] / 100 == pytest.approx(50.5, abs=0.05)
    # every output the same: a fixed length, a one-row table
    assert fit.output_tokens.lognormal == 7.0 and fit.output_tokens.table == {"table": [[7.0, 100]]}


def test_lognormal_params_give_back_mean_and_p99():
    mu, sigma = lognormal_params(2000.0, 7400.0)
    assert math.exp(mu + sigma**2 / 2) == pytest.approx(2000.0)
    assert math.exp(mu + Z99 * sigma) == pytest.approx(7400.0)
    assert sigma == pytest.approx(Z99 - math.sqrt(Z99**2 - 2 * math.log(3.7)))
    with pytest.raises(InputError, match="p99"):
        lognormal_params(100.0, 100.0 * MAX_P99_RATIO * 1.01)


def test_a_tail_too_heavy_for_a_lognormal_is_cut_and_said(tmp_path):
    # 985 prompts of 1 token and 15 of 10,000: mean 150.985, p99 10,000 (66x the mean)
    rows = [(i, 1, 1) for i in range(985)] + [(985 + i, 10000, 1) for i in range(15)]
    fit = fit_trace(read_trace(generic_csv(tmp_path, rows)))
    spec = fit.input_tokens.lognormal
    assert spec["mean"] == 151.0 and spec["p99"] / spec["mean"] < MAX_P99_RATIO
    assert spec["p99"] == pytest.approx(150.985 * 0.99 * MAX_P99_RATIO, abs=0.1)
    assert any("input_tokens: p99 / mean" in n for n in fit.notes)
    table = np.array(fit.input_tokens.table["table"])  # the table keeps the tail and the mean
    assert table[-1, 0] == 10000.0 and table[:, 1] @ table[:, 0] / 1000 == pytest.approx(150.985, abs=0.05)


def test_prefix_hits_from_hash_ids(tmp_path):
    rows = [
        {"timestamp": 0, "input_length": 1000, "output_length": 5, "hash_ids": [1, 2]},  # nothing seen: 0
        {"timestamp": 1000, "input_length": 1200, "output_length": 5, "hash_ids": [1, 2, 3]},  # 2 blocks: 1024
        {"timestamp": 2000, "input_length": 600, "output_length": 5, "hash_ids": [1, 9]},  # 1 block: 512
        {"timestamp": 3000, "input_length": 300, "output_length": 5, "hash_ids": [1]},  # 1 block, cut to 300
        {"timestamp": 4000, "input_length": 700, "output_length": 5, "hash_ids": [7, 2]},  # 2 seen, not leading: 0
    ]
    trace = read_trace(mooncake(tmp_path, rows))
    assert trace.cached_tokens.tolist() == [0, 1024, 512, 300, 0]
    assert trace.arrival_s.tolist() == [0, 1, 2, 3, 4]
    assert fit_trace(trace).prefix_cache_hit == pytest.approx(1836 / 3800)
    assert read_trace(mooncake(tmp_path, rows), block_tokens=256).cached_tokens.tolist() == [0, 512, 256, 256, 0]


def test_prefix_hits_follow_arrival_order_not_file_order(tmp_path):
    rows = [{"timestamp": 5000, "input_length": 1024, "output_length": 1, "hash_ids": [1, 2]},
            {"timestamp": 2000, "input_length": 1024, "output_length": 2, "hash_ids": [1, 2]}]
    trace = read_trace(mooncake(tmp_path, rows))
    assert trace.output_tokens.tolist() == [2, 1] and trace.cached_tokens.tolist() == [0, 1024]
    assert trace.arrival_s.tolist() == [0, 3] and any("sorted by arrival" in n for n in trace.notes)


def test_generic_csv_optional_columns_and_sorting(tmp_path):
    path = generic_csv(tmp_path, [(5, 100, 10, "a", 50), (2, 200, 20, "b", 0), (9, 300, 30, "a", 300)],
                       header="arrival_s,input_tokens,output_tokens,session,prefix_hit_tokens")
    trace = read_trace(path)
    assert trace.arrival_s.tolist() == [0, 3, 7] and trace.input_tokens.tolist() == [200, 100, 300]
    assert trace.cached_tokens.tolist() == [0, 50, 300] and trace.session.tolist() == ["b", "a", "a"]
    assert fit_trace(trace).prefix_cache_hit == pytest.approx(350 / 600)
    with pytest.raises(ValueError):
        trace.arrival_s[0] = 1.0  # read-only


def test_parquet_and_gzip_read_as_their_plain_forms(tmp_path):
    frame = pl.DataFrame({"arrival_s": [0.0, 1.5, 4.0], "input_tokens": [10, 20, 30], "output_tokens": [1, 2, 3],
                          "prefix_hit_tokens": [0, 10, 5]})
    frame.write_parquet(tmp_path / "t.parquet")
    csv = generic_csv(tmp_path, frame.rows(), header=",".join(frame.columns))
    write(tmp_path, "t.csv.gz", gzip.compress(csv.read_bytes()))
    a, b, c = (read_trace(tmp_path / n) for n in ("t.parquet", "t.csv", "t.csv.gz"))
    for x in (b, c):
        assert all(np.array_equal(getattr(a, f), getattr(x, f))
                   for f in ("arrival_s", "input_tokens", "output_tokens", "cached_tokens"))
    assert a.name == b.name == c.name == "t"


def test_azure_csv_timestamps(tmp_path):
    text = ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,4808,10\n"
            "2023-11-16 18:17:04.0319600,3180,8\n2023-11-16 18:18:03.9799600,110,27\n")
    trace = read_trace(write(tmp_path, "a.csv", text))
    assert trace.arrival_s == pytest.approx([0, 0.052, 60.0]) and trace.input_tokens.tolist() == [4808, 3180, 110]
    # the 2024 week-long files write the zone
    text = "TIMESTAMP,ContextTokens,GeneratedTokens\n2024-05-10 00:00:00.009930+00:00,4,1\n2024-05-10 00:00:02+00:00,5,2\n"
    assert read_trace(write(tmp_path, "b.csv", text)).arrival_s == pytest.approx([0, 1.99007])


# --- the shipped traces ------------------------------------------------------------------------------------------

# name: (rows, requests/s, peak_to_mean over 60 s, input mean, input p99, output mean, output p99, prefix hit)
SHIPPED = {
    "azure-code-2023": (8819, 2.566, 4.695, 2047.8, 7436.0, 27.9, 251.5, 0.0),
    "azure-conv-2023": (10108, 5.615, 1.523, 1243.3, 4123.0, 217.3, 609.9, 0.0),
    "mooncake-conversation": (1750, 2.930, 1.240, 13992.3, 99647.3, 354.1, 1045.0, 0.2889),
}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_traces_read_and_fit(name):
    rows, rate, peak, in_mean, in_p99, out_mean, out_p99, hit = SHIPPED[name]
    entry = shipped_traces()[name]
    trace = read_trace(name)
    assert trace.requests == rows == entry["rows"] and trace.name == name and not trace.notes
    assert trace.arrival_s[0] == 0 and np.all(np.diff(trace.arrival_s) >= 0)
    assert trace.input_tokens.min() >= 1 and trace.output_tokens.min() >= 1
    fit = fit_trace(trace)
    assert fit.requests_per_s == pytest.approx(rate, rel=1e-3) and fit.peak_to_mean == pytest.approx(peak, rel=1e-3)
    assert fit.input_tokens.lognormal == {"mean": in_mean, "p99": in_p99}
    assert fit.output_tokens.lognormal == {"mean": out_mean, "p99": out_p99}
    assert fit.prefix_cache_hit == pytest.approx(hit, abs=1e-4)
    for length in (fit.input_tokens, fit.output_tokens):
        table = np.array(length.table["table"])
        assert len(table) <= 32 and table[:, 1].sum() == rows
        assert table[:, 1] @ table[:, 0] / rows == pytest.approx(length.mean, abs=0.05)


def test_azure_code_is_long_prompts_short_answers():
    fit = fit_trace(read_trace("azure-code-2023"))
    assert 1800 < fit.input_tokens.mean < 2300 and 20 < fit.output_tokens.mean < 30


def test_every_shipped_trace_is_small_and_licensed():
    assert set(shipped_traces()) == set(SHIPPED)
    for name, entry in shipped_traces().items():
        assert (TRACES_DIR / entry["file"]).stat().st_size <= 150 * 1024, name
        assert entry["licence"] in ("CC-BY-4.0", "Apache-2.0") and (TRACES_DIR / entry["licence_file"]).is_file()
        assert entry["attribution"] and entry["window"] and len(entry["source"]["commit"]) == 40


def test_shipped_fit_renders(tmp_path):
    fit = fit_trace(read_trace("mooncake-conversation"))
    summary = fit_summary(fit)
    json.dumps(summary, allow_nan=False)
    assert summary["workload"] == fit.to_workload()
    pasted = yaml.safe_load(fit_yaml(fit, lengths="table"))
    assert pasted == json.loads(json.dumps(fit.to_workload(lengths="table")))
    assert set(pasted) == {"kind", "requests_per_s", "peak_to_mean", "input_tokens", "output_tokens",
                           "prefix_cache_hit"}
    assert fit_lines(fit)[0].startswith("trace          mooncake-conversation: 1,750 requests")
    with pytest.raises(InputError, match="kind"):
        fit.to_workload(kind="batch")
    with pytest.raises(InputError, match="lengths"):
        fit.to_workload(lengths="normal")


def test_specs_are_what_the_scenario_accepts():
    lengths = pytest.importorskip("planner.lengths")
    for name in SHIPPED:
        fit = fit_trace(read_trace(name))
        for kind in ("lognormal", "table"):
            for field in ("input_tokens", "output_tokens"):
                spec = getattr(fit, field).spec(kind)
                assert lengths.Lengths.from_spec(spec, field).mean == pytest.approx(getattr(fit, field).mean,
                                                                                     rel=1e-3)


# --- determinism and replay --------------------------------------------------------------------------------------

def test_reading_and_fitting_are_deterministic():
    a, b = read_trace("azure-conv-2023"), read_trace("azure-conv-2023")
    assert np.array_equal(a.arrival_s, b.arrival_s) and np.array_equal(a.input_tokens, b.input_tokens)
    assert fit_summary(fit_trace(a)) == fit_summary(fit_trace(b))


def test_replay_scales_the_rate(tmp_path):
    trace = read_trace("azure-code-2023")
    one, two = sample_arrivals(trace, 3.0, 7200.0, 7), sample_arrivals(trace, 3.0, 7200.0, 7)
    assert np.array_equal(one.arrival_s, two.arrival_s) and np.array_equal(one.input_tokens, two.input_tokens)
    assert not np.array_equal(one.arrival_s, sample_arrivals(trace, 3.0, 7200.0, 8).arrival_s)
    assert one.arrival_s[0] == 0 and one.arrival_s[-1] < 7200 and np.all(np.diff(one.arrival_s) >= 0)
    # 7200 s at 3x is 6.3 loops of the hour: about 3 x 2.566 requests/s
    assert one.requests / 7200 == pytest.approx(3 * 2.566, rel=0.1)
    assert set(one.input_tokens.tolist()) <= set(trace.input_tokens.tolist())
    # the replayed loop keeps the trace's gaps: one request every 1 s becomes one every 0.5 s
    even = read_trace(generic_csv(tmp_path, [(t, 10, 1) for t in range(5)]))
    assert sample_arrivals(even, 2.0, 4.0, 0).arrival_s.tolist() == [0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5]
    with pytest.raises(InputError, match="rate_scale"):
        sample_arrivals(trace, 0, 10.0, 0)


# --- hostile input -----------------------------------------------------------------------------------------------

HEADER = "arrival_s,input_tokens,output_tokens\n"
BAD = [
    ("empty.csv", b"", ["is empty"]),
    ("blank.csv", b"\n\n  \n", ["is empty"]),
    ("header.csv", HEADER.encode(), ["no requests"]),
    ("latin1.csv", (HEADER + "0,1,1\n1,caf\xe9,1\n").encode("latin-1"), [":3:", "not UTF-8"]),
    ("columns.csv", b"time,prompt,answer\n0,1,1\n", [":1:", "arrival_s", "missing column"]),
    ("negative.csv", (HEADER + "0,1,1\n1,-5,1\n").encode(), [":3:", "input_tokens", "-5"]),
    ("zero.csv", (HEADER + "0,1,0\n").encode(), [":2:", "output_tokens", "from 1 to 1e8"]),
    ("text.csv", (HEADER + "0,1,1\n1,2,lots\n").encode(), [":3:", "output_tokens", "lots"]),
    ("nan.csv", (HEADER + "0,1,1\nnan,2,2\n").encode(), [":3:", "arrival_s"]),
    ("inf.csv", (HEADER + "0,1,1\n1,inf,2\n").encode(), [":3:", "input_tokens"]),
    ("missing.csv", (HEADER + "0,1,1\n1,,2\n").encode(), [":3:", "input_tokens", "nothing"]),
    ("blankline.csv", (HEADER + "0,1,1\n\n2,x,1\n").encode(), [":4:", "input_tokens"]),
    ("ragged.csv", (HEADER + "0,1,1\n1,2,3,4\n").encode(), [":3:", "4 fields", "header's 3"]),
    ("hit.csv", b"arrival_s,input_tokens,output_tokens,prefix_hit_tokens\n0,10,1,11\n", [":2:", "prefix_hit_tokens"]),
    ("azure.csv", b"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.97,5,1\nyesterday,5,1\n",
     [":3:", "TIMESTAMP", "yesterday"]),
    ("azure2.csv", b"TIMESTAMP,ContextTokens,GeneratedTokens\nnoon,5,1\n", [":2:", "TIMESTAMP"]),
    ("m.jsonl", b'{"timestamp": 0, "input_length": 5, "output_length": 1}\n{"timestamp": 1,\n', [":2:", "not JSON"]),
    ("m2.jsonl", b'{"timestamp": 0, "input_length": 5}\n', [":1:", "output_length", "nothing"]),
    ("m3.jsonl", b'{"timestamp": 0, "input_length": true, "output_length": 1}\n', [":1:", "input_length", "True"]),
    ("m4.jsonl", b'{"timestamp": -3, "input_length": 5, "output_length": 1}\n', [":1:", "timestamp"]),
    ("m5.jsonl", b'[1, 2, 3]\n', [":1:", "JSON object"]),
    ("m6.jsonl", b'{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [[1]]}\n', [":1:", "hash_ids"]),
    ("m7.jsonl", b'{"timestamp": 0, "input_length": 5, "output_length": 1}\n\xff\xfe\n', [":2:", "UTF-8"]),
    ("huge.csv", (HEADER + "0,1e9,1\n").encode(), [":2:", "input_tokens", "1e8"]),
    ("m8.jsonl", b'{"timestamp": 0, "input_length": 1e400, "output_length": 1}\n', [":1:", "input_length", "inf"]),
    ("m9.jsonl", b'{"timestamp": NaN, "input_length": 5, "output_length": 1}\n', [":1:", "timestamp", "nan"]),
    ("m10.jsonl", b'{"timestamp": 0, "input_length": 1' + b"0" * 5000 + b', "output_length": 1}\n', [":1:", "not JSON"]),
    ("deep.jsonl", b"[" * 100000 + b"\n", [":1:"]),
    ("broken.csv.gz", b"\x1f\x8b\x08\x00garbage", ["gzip"]),
    ("fake.parquet", b"PAR1 not really", ["not a Parquet table"]),
]


@pytest.mark.parametrize("name,content,expected", BAD, ids=[b[0] for b in BAD])
def test_bad_files_say_where_and_what(tmp_path, name, content, expected):
    path = write(tmp_path, name, content)
    with pytest.raises(InputError) as err:
        read_trace(path)
    assert str(err.value).startswith(str(path)) and err.value.exit_code == 2
    for text in expected:
        assert text in str(err.value)


def test_parquet_errors_name_the_row(tmp_path):
    pl.DataFrame({"arrival_s": [0.0, 1.0], "input_tokens": [5.0, -1.0], "output_tokens": [1, 1]}).write_parquet(
        tmp_path / "bad.parquet")
    with pytest.raises(InputError, match=r"input_tokens \(row 2\)"):
        read_trace(tmp_path / "bad.parquet")
    pl.DataFrame({"arrival_s": [0.0], "input": [5.0], "output_tokens": [1]}).write_parquet(tmp_path / "cols.parquet")
    with pytest.raises(InputError, match="input_tokens: missing column"):
        read_trace(tmp_path / "cols.parquet")


def test_parquet_columns_of_the_wrong_type(tmp_path):
    pl.DataFrame({"arrival_s": [0.0], "input_tokens": [[1, 2]], "output_tokens": [1]}).write_parquet(
        tmp_path / "nested.parquet")
    with pytest.raises(InputError, match=r"input_tokens \(row 1\): expected a number of tokens.*List"):
        read_trace(tmp_path / "nested.parquet")


def test_size_caps(tmp_path):
    path = generic_csv(tmp_path, [(t, 10, 1) for t in range(100)])
    with pytest.raises(InputError, match="larger than 100 bytes"):
        read_trace(path, max_bytes=100)
    bomb = write(tmp_path, "bomb.csv.gz", gzip.compress(HEADER.encode() + b"0,1,1\n" * 100000))
    assert bomb.stat().st_size < 2000
    with pytest.raises(InputError, match="inflates to more than"):
        read_trace(bomb, max_bytes=10000)


def test_paths_that_are_not_traces(tmp_path):
    with pytest.raises(InputError, match="no such file.*azure-code-2023"):
        read_trace(tmp_path / "nothing.csv")
    with pytest.raises(InputError, match="is a directory"):
        read_trace(tmp_path)
    with pytest.raises(InputError, match="format"):
        read_trace("azure-code-2023", format="xlsx")


def test_fits_that_cannot_be_made(tmp_path):
    with pytest.raises(InputError, match="two or more distinct times"):
        fit_trace(read_trace(generic_csv(tmp_path, [(3, 10, 1), (3, 20, 1)])))
    trace = read_trace(generic_csv(tmp_path, [(0, 10, 1), (1, 20, 1)]))
    for window in (0, -1, float("nan"), float("inf"), "60"):
        with pytest.raises(InputError, match="window_s"):
            fit_trace(trace, window_s=window)


def test_traces_import_nothing_from_the_upper_layers():
    for module in Path(TRACES_DIR.parent.parent / "traces").glob("*.py"):
        text = module.read_text()
        for layer in ("planner.fleet", "planner.report", "planner.cli", "planner.scenario"):
            assert layer not in text, (module.name, layer)
