"""Importers: a benchmark tool's saved result file -> measurement rows (docs/INTERFACE.md 7.10.1).

Each tool has a reader (``READERS``, a registry) that turns its file into runs, one per benchmark run, each a dict
of what the table needs: concurrency, mean prompt and output tokens, output and prompt tokens/s, per-user speed,
TTFT at a percentile, speculative method, date. The formats were read from the tools' own source:

* ``vllm``: ``vllm bench serve --save-result`` (vllm/benchmarks/serve.py, 2025-2026) and the older
  ``benchmarks/benchmark_serving.py --save-result`` (v0.6-v0.8); one JSON object, or one per line with
  ``--append-result``. Per-user speed is 1000 / ``mean_tpot_ms`` (TPOT: (latency - TTFT) / (output - 1); ITL is
  pooled chunk gaps, not a per-user speed).
* ``sglang``: ``python -m sglang.bench_serving --output-file`` (and ``sglang.benchmark.serving``), one JSON line
  per run, 2025 onward (``mean_tpot_ms`` is needed; mid-2024 files without it are refused with the reason). A
  bare ``Infinity`` request rate is read.
* ``genai-perf``: ``profile_export_genai_perf.json`` of GenAI-Perf 0.0.5-0.0.16 (flat ``input_config`` before
  0.0.13, nested after) and AIPerf's ``profile_export_aiperf.json``. Per-user speed is
  ``output_token_throughput_per_user`` (0.0.13+), else 1000 / ``inter_token_latency`` (the older
  ``output_token_throughput_per_request`` counts the TTFT, so it is not used).
"""

from __future__ import annotations

import re
from pathlib import Path

from planner import catalog
from planner.errors import InputError
from planner.measurements.reading import date, mapping, number, parse_json, read_text, row_cap, text
from planner.measurements.table import Measurement, measurement_of

TTFT_PERCENTILES = (90.0, 99.0, 95.0)  # the TTFT read, in this order of preference, else the median
SPECULATIVE_NAMES = {"eagle": "eagle", "eagle3": "eagle", "nextn": "mtp", "mtp": "mtp", "standalone": "draft_model",
                     "draft_model": "draft_model", "ngram": "draft_model"}


_NOT_JSON = object()


def _json_documents(path: Path) -> list[dict]:
    """One JSON object, or one per line (JSONL); Python's reader takes a bare Infinity, as SGLang writes it. The
    file is read by the one defensive reader (``reading``): size and run limits, UTF-8, depth, each run a
    mapping."""
    return _documents(path)[0]


def _documents(path: Path) -> tuple[list[dict], bool]:
    """The runs of a result file and whether it was JSON lines (one object per line)."""
    text = read_text(path, "a saved benchmark result (JSON or JSON lines)")
    try:
        whole = parse_json(text, path)
    except ValueError:
        whole = _NOT_JSON
    if whole is not _NOT_JSON:
        docs = whole if isinstance(whole, list) else [whole]
    else:
        lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
        row_cap(len(lines), path, "runs")
        docs = []
        for n, line in lines:
            try:
                docs.append(parse_json(line, path, f"line {n} "))
            except ValueError as exc:
                raise InputError(f"line {n} is not JSON ({exc})", file=str(path)) from None
    if not docs:
        raise InputError("is empty; expected a saved benchmark result", file=str(path))
    row_cap(len(docs), path, "runs")
    return [mapping(doc, path, n) for n, doc in enumerate(docs, 1)], whole is _NOT_JSON


def _need(doc: dict, key: str, path: Path, n: int, why: str = ""):
    value = doc.get(key)
    if value is None:
        raise InputError(f"run {n} has no {key!r}{why}", file=str(path))
    return value


def _num(doc: dict, key: str, path: Path, n: int, why: str = "", **sign) -> float:
    """A required numeric field of run ``n`` (``positive=True`` or ``nonnegative=True``)."""
    return number(_need(doc, key, path, n, why), path, n, key, **sign)


def _opt(doc: dict, key: str, path: Path, n: int, **sign) -> float | None:
    """An optional numeric field of run ``n``: None when absent."""
    value = doc.get(key)
    return None if value is None else number(value, path, n, key, **sign)


def _ttft_ms(doc: dict, key_of, path: Path, n: int) -> tuple[float | None, float | None]:
    """(ms, percentile) of the preferred TTFT percentile present, else the median."""
    for p in TTFT_PERCENTILES:
        value = _opt(doc, key_of(p), path, n, positive=True)
        if value is not None:
            return value, p
    for key in ("median_ttft_ms", "p50_ttft_ms"):
        value = _opt(doc, key, path, n, positive=True)
        if value is not None:
            return value, 50.0
    return None, None


def _pkey(p: float, metric: str) -> str:
    return f"p{int(p) if float(p).is_integer() else p}_{metric}_ms"


def _completed(doc: dict, path: Path, n: int) -> float:
    completed = _num(doc, "completed", path, n, nonnegative=True)
    if completed <= 0:
        raise InputError(f"run {n} completed no request", file=str(path))
    return completed


def vllm_runs(path: Path, docs: list[dict] | None = None) -> list[dict]:
    runs = []
    for n, doc in enumerate(_json_documents(path) if docs is None else docs, 1):
        completed = _completed(doc, path, n)
        tpot = _num(doc, "mean_tpot_ms", path, n, " (needs a tokenizer: run without --skip-tokenizer-init)",
                    positive=True)
        out = _num(doc, "total_output_tokens", path, n, positive=True) / completed
        ttft, pct = _ttft_ms(doc, lambda p: _pkey(p, "ttft"), path, n)
        concurrency = _opt(doc, "max_concurrency", path, n, positive=True)
        derived = concurrency is None
        if derived:  # unbounded: Little's law over the measured requests (rate x time in the system)
            e2e_ms = _opt(doc, "mean_e2el_ms", path, n, positive=True) or (
                (_opt(doc, "mean_ttft_ms", path, n, nonnegative=True) or 0.0) + tpot * (out - 1))
            concurrency = _num(doc, "request_throughput", path, n, positive=True) * e2e_ms / 1000.0
        spec = doc.get("spec_decode_num_drafts")
        runs.append({
            "concurrency": concurrency, "concurrency_derived": derived,
            "input_tokens": _num(doc, "total_input_tokens", path, n, positive=True) / completed, "output_tokens": out,
            "output_tokens_per_s": _num(doc, "output_throughput", path, n, nonnegative=True),
            "input_tokens_per_s": _num(doc, "total_input_tokens", path, n, positive=True)
            / _num(doc, "duration", path, n, positive=True),
            "tps_per_user": 1000.0 / tpot, "ttft_ms": ttft, "ttft_percentile": pct,
            "speculative_seen": bool(spec), "speculative": None,
            "date": date(doc.get("date"), path, n, "date"),
            "model_name": text(doc.get("model_id")), "tool": "vllm bench serve",
            "model_ids": _ids(doc.get("model_id"), doc.get("tokenizer_id"), doc.get("tokenizer")),
        })
    return runs


def sglang_runs(path: Path, docs: list[dict] | None = None) -> list[dict]:
    runs = []
    for n, doc in enumerate(_json_documents(path) if docs is None else docs, 1):
        completed = _completed(doc, path, n)
        tpot = _num(doc, "mean_tpot_ms", path, n, " (SGLang before 2025 saved no TPOT; rerun with a newer one)",
                    positive=True)
        ttft, pct = _ttft_ms(doc, lambda p: _pkey(p, "ttft"), path, n)
        concurrency = _opt(doc, "max_concurrency", path, n, positive=True)
        derived = concurrency is None
        if derived:
            concurrency = _num(doc, "concurrency", path, n, positive=True)  # measured mean requests in flight
        info = mapping(doc.get("server_info"), path, n, "server_info")
        algorithm = (text(info.get("speculative_algorithm")) or "").lower()
        total_input = _num(doc, "total_input_tokens", path, n, positive=True)
        input_rate = _opt(doc, "input_throughput", path, n, nonnegative=True) or (
            total_input / _num(doc, "duration", path, n, positive=True))
        runs.append({
            "concurrency": concurrency, "concurrency_derived": derived,
            "input_tokens": total_input / completed,
            "output_tokens": _num(doc, "total_output_tokens", path, n, positive=True) / completed,
            "output_tokens_per_s": _num(doc, "output_throughput", path, n, nonnegative=True),
            "input_tokens_per_s": input_rate,
            "tps_per_user": 1000.0 / tpot, "ttft_ms": ttft, "ttft_percentile": pct,
            "speculative_seen": bool(algorithm) or bool(doc.get("accept_length")),
            "speculative": SPECULATIVE_NAMES.get(algorithm), "date": None,
            "model_name": text(info.get("served_model_name")) or text(info.get("model_path")),
            "tool": "sglang bench_serving",
            "model_ids": _ids(info.get("served_model_name"), info.get("model_path"), info.get("tokenizer_path"),
                              doc.get("model_id"), doc.get("tokenizer_id")),
        })
    return runs


def _stat(doc: dict, metric: str, path: Path, n: int, key: str = "avg", **sign) -> float | None:
    """``doc[metric][key]`` of a GenAI-Perf export as a number (None when absent)."""
    value = doc.get(metric)
    if value is None:
        return None
    value = mapping(value, path, n, metric).get(key)
    return None if value is None else number(value, path, n, f"{metric}.{key}", **sign)


def _genai_concurrency(config: dict, path: Path, n: int):
    analyzer = mapping(config.get("perf_analyzer"), path, n, "input_config.perf_analyzer")
    stimulus = mapping(analyzer.get("stimulus"), path, n, "input_config.perf_analyzer.stimulus")
    loadgen = mapping(config.get("loadgen"), path, n, "input_config.loadgen")
    for field, value in (("perf_analyzer.stimulus.concurrency", stimulus.get("concurrency")),
                         ("concurrency", config.get("concurrency")), ("loadgen.concurrency", loadgen.get("concurrency"))):
        if value not in (None, ""):
            return number(value, path, n, f"input_config.{field}", positive=True)
    return None


def genai_perf_runs(path: Path, docs: list[dict] | None = None) -> list[dict]:
    runs = []
    for n, doc in enumerate(_json_documents(path) if docs is None else docs, 1):
        config = mapping(doc.get("input_config"), path, n, "input_config")
        concurrency = _genai_concurrency(config, path, n)
        if concurrency is None:
            raise InputError(f"run {n} was not run at a fixed concurrency (its input_config has none): only "
                             f"--concurrency runs measure an operating point", file=str(path))
        per_user = _stat(doc, "output_token_throughput_per_user", path, n, positive=True)
        if per_user is None:
            itl = _stat(doc, "inter_token_latency", path, n, positive=True)
            if itl is None:
                raise InputError(f"run {n} has neither output_token_throughput_per_user nor inter_token_latency "
                                 f"(run with streaming)", file=str(path))
            per_user = 1000.0 / itl
        ttft, pct = None, None
        for p in TTFT_PERCENTILES + (50.0,):
            value = _stat(doc, "time_to_first_token", path, n, f"p{int(p)}", positive=True)
            if value is not None:
                ttft, pct = value, p
                break
        endpoint = mapping(config.get("endpoint"), path, n, "input_config.endpoint")
        names = config.get("model_names") or config.get("model") or endpoint.get("model_names")
        inputs = _stat(doc, "input_sequence_length", path, n, nonnegative=True) or 0.0
        runs.append({
            "concurrency": concurrency, "concurrency_derived": False,
            "input_tokens": inputs,
            "output_tokens": _stat(doc, "output_sequence_length", path, n, nonnegative=True) or 0.0,
            "output_tokens_per_s": _stat(doc, "output_token_throughput", path, n, nonnegative=True) or 0.0,
            "input_tokens_per_s": (_stat(doc, "request_throughput", path, n, nonnegative=True) or 0.0) * inputs,
            "tps_per_user": per_user, "ttft_ms": ttft, "ttft_percentile": pct,
            "speculative_seen": False, "speculative": None,
            "date": date(doc.get("start_time"), path, n, "start_time"),
            "model_name": text(names[0]) if isinstance(names, list) and names else None,
            "tool": "aiperf" if "start_time" in doc else "genai-perf",
            "model_ids": _ids(*(names if isinstance(names, list) else [names]), config.get("tokenizer"),
                              config.get("tokenizer", {}).get("name") if isinstance(config.get("tokenizer"), dict)
                              else None),
        })
    return runs


READERS = {"vllm": vllm_runs, "sglang": sglang_runs, "genai-perf": genai_perf_runs}
TOOLS: tuple[str, ...] = tuple(READERS)


# ---- which tool wrote a file: from its keys -------------------------------------------------------------------------
# Keys only one tool writes (read from the tools' sources, as the readers above): a file's tool is the one with the
# most of them in its first run. ``backend`` is no evidence: each benchmark client drives several servers.
TOOL_KEYS = {
    "genai-perf": ("input_config", "time_to_first_token", "output_token_throughput", "request_latency",
                   "output_sequence_length"),
    "sglang": ("server_info", "mean_e2e_latency_ms", "total_output_tokens_retokenized", "accept_length",
               "total_input_text_tokens"),
    "vllm": ("model_id", "tokenizer_id", "mean_e2el_ms", "num_prompts", "burstiness", "request_goodput"),
}
TOOL_WORDS = {"vllm": "a vLLM result", "sglang": "an SGLang result",
              "genai-perf": "a GenAI-Perf / AIPerf profile export"}


def detect_tool(docs: list[dict], jsonl: bool = False) -> tuple[str, str] | None:
    """(tool, evidence in words) for a result file's parsed runs, or None when its keys do not tell."""
    if not docs or not isinstance(docs[0], dict):
        return None
    doc = docs[0]
    found = {}
    for tool, keys in TOOL_KEYS.items():
        hits = [k for k in keys if k in doc]
        if tool == "genai-perf":  # GenAI-Perf's metrics are {unit, avg, pNN} mappings; the others' are numbers
            hits = [k for k in hits if k == "input_config" or isinstance(doc.get(k), dict)]
        if hits:
            found[tool] = hits
    if not found:
        return None
    ranked = sorted(found.items(), key=lambda kv: -len(kv[1]))
    if len(ranked) > 1 and len(ranked[0][1]) == len(ranked[1][1]):
        return None
    tool, hits = ranked[0]
    form = f"JSONL of {len(docs)} runs" if jsonl else "JSON"
    return tool, f"{form} with {', '.join(hits[:3])}"


def check_tool(path: Path, tool: str | None, docs: list[dict], jsonl: bool) -> str:
    """The tool to read ``path`` with: ``tool`` (``--from``) where the file's keys agree or do not tell, the
    detected one where ``tool`` is None; a contradiction is an InputError naming both."""
    seen = detect_tool(docs, jsonl)
    if tool is None:
        if seen is None:
            keys = ", ".join(sorted({k for keys in TOOL_KEYS.values() for k in keys}))
            raise InputError(f"does not say which tool wrote it (none of the keys {keys}); say --from "
                             f"{'|'.join(TOOLS)}", file=str(path))
        return seen[0]
    if seen is not None and seen[0] != tool:
        raise InputError(f"looks like {TOOL_WORDS[seen[0]]} ({seen[1]}), not {tool}; use --from {seen[0]}",
                         file=str(path))
    return tool


# ---- which catalog model a file served: Hugging Face ids -----------------------------------------------------------
# A catalog model's Hugging Face id is the repository of its ``source`` (the config.json it was read from). A file's
# id maps to the model whose id matches once both are normalized: organisation and "Meta-" dropped, lower case,
# and trailing variant words taken off (Instruct, chat, hf, base, a quantization such as FP8 or AWQ, a release
# date such as 0528 or 2507): a checkpoint of the same architecture. Anything else (a fine-tune under another
# name, a distillation) maps to nothing and needs -m.
_VARIANT = re.compile(r"[-_.](instruct|chat|hf|base|it|fp8|fp8-dynamic|dynamic|fp4|nvfp4|mxfp4|awq|gptq|int4|int8|"
                      r"w4a16|w8a8|w4a8|w8a16|bf16|fp16|quantized|\d{4})$")
_HF_SOURCE = re.compile(r"huggingface\.co/([^/\s]+/[^/\s]+)")


def _ids(*values) -> list[str]:
    out = []
    for value in values:
        value = text(value)
        if value and value.strip() and value.strip() not in out:
            out.append(value.strip())
    return out


def _normal(name: str) -> str:
    name = name.strip().rstrip("/").lower()
    name = name.rsplit("/", 1)[-1]  # org/name, or a local path to a checkpoint: its last part
    name = name.removeprefix("meta-")
    while True:
        shorter = _VARIANT.sub("", name)
        if shorter == name or not shorter:
            return name
        name = shorter


def hf_id(model_id: str) -> str | None:
    """The Hugging Face id of a catalog model (from its ``source``), None when its source is elsewhere."""
    m = _HF_SOURCE.search(catalog.get_model(model_id).source)
    return m.group(1) if m else None


def catalog_model_of(name: str | None) -> str | None:
    """The catalog model a Hugging Face id (or a catalog id, or a checkpoint path) names, or None."""
    if not name or not isinstance(name, str):
        return None
    models = catalog.model_catalog()
    if name in models:
        return name
    key = _normal(name)
    for model_id in models:
        names = {model_id.lower(), _normal(model_id)}
        source = hf_id(model_id)
        if source:
            names |= {source.lower(), _normal(source)}
        if name.lower() in names or key in names:
            return model_id
    return None


def nearest_model(name: str) -> str:
    """The catalog model closest to ``name`` by its normalized spelling (for a did-you-mean)."""
    import difflib

    models = sorted(catalog.model_catalog())
    key = _normal(name)
    close = difflib.get_close_matches(key, models, n=1, cutoff=0.0)
    return close[0] if close else models[0]


def resolve_model(path: Path, model: str | None, runs: list[dict], custom_ids: bool) -> tuple[str, str | None]:
    """(the catalog model the rows are for, a note on where it came from) from ``-m`` and the ids the file names.
    ``-m`` may be a catalog id or the Hugging Face id of one; without it the file's ids decide; ``-m`` that names
    another catalog model than the file's ids is refused (InputError, with the file's model as did-you-mean)."""
    named = _ids(*(i for run in runs for i in run.get("model_ids") or [run.get("model_name")]))
    mapped = {}
    for name in named:
        found = catalog_model_of(name)
        if found:
            mapped.setdefault(found, name)
    if model is None:
        if len(mapped) == 1:
            (found, name), = mapped.items()
            return found, f"model {found} from the file's {name}"
        if len(mapped) > 1:
            raise InputError(f"names several catalog models ({', '.join(f'{v} = {k}' for k, v in mapped.items())}); "
                             f"say which with -m", file=str(path))
        if named:
            raise InputError(f"served {named[0]!r}, which is no catalog model (did you mean "
                             f"{nearest_model(named[0])!r}?); say -m with a catalog id (planner catalog), or --custom-ids -m with a scenario's "
                             f"model", file=str(path))
        raise InputError("names no model (no model_id, model or tokenizer field); say -m with a catalog id",
                         file=str(path))
    if not isinstance(model, str) or not model:
        raise InputError(f"expected an id (text), got {model!r}", field="--model")
    if custom_ids and model not in catalog.model_catalog():
        return model, None  # a scenario's own model: the file's ids are only noted
    as_catalog = catalog_model_of(model)
    if as_catalog is None:
        raise InputError(f"{model!r} is neither a catalog model nor the Hugging Face id of one (did you mean "
                         f"{nearest_model(model)!r}?); known: {', '.join(sorted(catalog.model_catalog()))}; an id "
                         f"your scenario defines: --custom-ids", field="--model")
    if mapped and as_catalog not in mapped:
        theirs, name = next(iter(mapped.items()))
        raise InputError(f"-m {model} contradicts the file, which served {name} (catalog {theirs}); did you mean "
                         f"-m {theirs}?", file=str(path))
    return as_catalog, (f"-m {model} is catalog {as_catalog}" if as_catalog != model else None)


def check_catalog_ids(hardware: str, model: str | None = None) -> None:
    """InputError naming the option for an id the catalog does not know (with its did-you-mean)."""
    checks = (("--hardware", catalog.get_hardware, hardware), ("--model", catalog.get_model, model))
    for field, lookup, value in checks:
        if value is None:
            continue
        try:
            lookup(value)
        except catalog.CatalogError as exc:
            raise InputError(f"{exc}; an id your scenario defines: --custom-ids", field=field) from None


def import_results(path, tool: str | None, hardware: str, model: str | None, precision: str, chips: int,
                   role: str = "colocated",
                   replicas: int = 1, tensor_parallel: int | None = None, pipeline_parallel: int | None = None,
                   expert_parallel: bool = False, speculative: str | None = None,
                   custom_ids: bool = False) -> list[Measurement]:
    """Rows of the measurement table from one saved result file of ``tool``. The benchmark may have run on
    ``replicas`` data-parallel replicas behind one endpoint: its concurrency and throughputs are divided among
    them. A run that used speculative decoding needs ``speculative`` (the method) unless the file names it.
    ``hardware`` must be a catalog id and ``model`` a catalog id or the Hugging Face id of one (a row under
    another id is never used by a plan), unless ``custom_ids``: ids a scenario defines (``hardware.custom``,
    ``models``). ``tool`` None: the tool is detected from the file's keys; a ``tool`` the keys contradict is
    refused. ``model`` None: the model is the catalog model the file's Hugging Face ids name; a ``model`` they
    contradict is refused."""
    path = Path(path)
    if tool is not None and tool not in READERS:
        raise InputError(f"unknown tool {tool!r}; expected one of {', '.join(TOOLS)}", field="--from")
    if not isinstance(hardware, str) or not hardware:
        raise InputError(f"expected an id (text), got {hardware!r}", field="--hardware")
    if model is not None and (not isinstance(model, str) or not model):
        raise InputError(f"expected an id (text), got {model!r}", field="--model")
    if not custom_ids:
        check_catalog_ids(hardware)
    if not path.is_file():
        raise InputError("no such file", file=str(path))
    if not (isinstance(replicas, int) and replicas >= 1):
        raise InputError(f"expected a whole number >= 1, got {replicas!r}", field="--replicas")
    docs, jsonl = _documents(path)
    tool = check_tool(path, tool, docs, jsonl)
    runs = READERS[tool](path, docs)
    model, how = resolve_model(path, model, runs, custom_ids)
    rows = []
    for n, run in enumerate(runs, 1):
        method = speculative or run["speculative"] or ("none" if not run["speculative_seen"] else None)
        if method is None:
            raise InputError(f"run {n} used speculative decoding; say which method with --speculative "
                             f"(mtp, eagle, draft_model)", file=str(path))
        notes = [f"{run['tool']} result {path.name} run {n}"]
        if run["concurrency_derived"]:
            notes.append("concurrency from the measured requests in flight (no max_concurrency)")
        if replicas > 1:
            notes.append(f"one of {replicas} replicas")
        if how:
            notes.append(how)
        if run["model_name"] and catalog_model_of(run["model_name"]) != model and \
                model.lower() not in str(run["model_name"]).lower().replace("_", "-"):
            notes.append(f"served as {run['model_name']}")
        row = {
            "hardware": hardware, "model": model, "precision": precision, "chips": chips, "role": role,
            "tensor_parallel": tensor_parallel, "pipeline_parallel": pipeline_parallel,
            "expert_parallel": expert_parallel, "input_tokens": run["input_tokens"],
            "output_tokens": run["output_tokens"], "concurrency": run["concurrency"] / replicas,
            "tps_per_user": run["tps_per_user"], "output_tokens_per_s": run["output_tokens_per_s"] / replicas,
            "input_tokens_per_s": run["input_tokens_per_s"] / replicas if run["input_tokens_per_s"] else None,
            "ttft_s": run["ttft_ms"] / 1000.0 if run["ttft_ms"] else None,
            "ttft_percentile": run["ttft_percentile"] if run["ttft_ms"] else None,
            "speculative": method, "source": "; ".join(notes), "date": run["date"],
        }
        rows.append(measurement_of(row, f"run {n}", str(path)))
    return rows


def guess_tool(path) -> str | None:
    """The tool that wrote a result file, from its keys (None when unclear)."""
    try:
        seen = detect_tool(*_documents(Path(path)))
    except (InputError, OSError):
        return None
    return seen[0] if seen else None

