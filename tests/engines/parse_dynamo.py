"""Run inside the Dynamo environment (tests/engines/install.py: ai-dynamo and its runtime with the vLLM its
release pins): each case on standard input (JSON: [{case, argv}], argv ``python3 -m dynamo.vllm ...`` as a
worker's container runs it) parsed by Dynamo's own worker parser (``dynamo.vllm.args.parse_args``: Dynamo's flags,
then vLLM's engine arguments strictly, then its checks, such as a prefill worker's KV transfer config), and the
speculative config checked as tests/engines/parse_vllm.py does; one JSON line out per case: {case, ok, error}.
The parser builds no engine and fetches no model; vLLM's CPU platform stands in for the GPU."""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")

from dynamo.vllm.args import parse_args  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vllm_checks import check_speculative  # noqa: E402


def check(argv: list[str]) -> str | None:
    err = io.StringIO()
    try:
        if argv[:3] != ["python3", "-m", "dynamo.vllm"]:
            raise ValueError(f"not a dynamo.vllm worker: {argv[:3]}")
        with contextlib.redirect_stderr(err):
            config = parse_args(argv[3:])
        check_speculative(config.engine_args.speculative_config)
    except SystemExit:
        lines = [line for line in err.getvalue().splitlines() if line.strip()]
        return lines[-1] if lines else "the parser exited"
    except Exception as exc:  # the worker's own check refused it: its words are the finding
        return f"{type(exc).__name__}: {exc}"
    return None


if __name__ == "__main__":
    from importlib.metadata import version

    print(json.dumps({"engine": "dynamo", "version": version("ai-dynamo"), "vllm": version("vllm")}), flush=True)
    for case in json.load(sys.stdin):
        print(json.dumps({"case": case["case"], "ok": (e := check(case["argv"])) is None, "error": e}), flush=True)
