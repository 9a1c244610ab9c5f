"""Run inside the SGLang environment (tests/engines/install.py): each case on standard input (JSON: [{case, argv}],
argv ``python -m sglang.launch_server ...`` or ``python -m sglang_router.launch_router ...``) parsed by SGLang's
own ``prepare_server_args`` (its parser with every flag's type and choices, and ``ServerArgs``), a router by
sglang-router's own parser and its argument checks; one JSON line out per case: {case, ok, error}. Not run here:
``ServerArgs.resolve_once`` and ``check_server_args``, which read the model's config.json from the Hub and need a
GPU platform (neither is on this machine)."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import sys

from sglang.srt.server_args import prepare_server_args

SERVER = ["python", "-m", "sglang.launch_server"]
ROUTER = ["python", "-m", "sglang_router.launch_router"]


def check(argv: list[str]) -> str | None:
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            if argv[:3] == SERVER:
                prepare_server_args(argv[3:])
            elif argv[:3] == ROUTER:
                check_router(argv[3:])
            else:
                raise ValueError(f"not an SGLang server or router: {argv[:3]}")
    except SystemExit:
        lines = [line for line in err.getvalue().splitlines() if line.strip() and "error" in line.lower()]
        return lines[-1] if lines else "the parser exited"
    except Exception as exc:  # SGLang's own check refused it: its words are the finding
        return f"{type(exc).__name__}: {exc}"
    finally:
        logging.disable(logging.NOTSET)
    return None


def check_router(words: list[str]) -> None:
    from sglang_router.launch_router import parse_router_args

    router = parse_router_args(words)
    router._validate_router_args()
    if not router.pd_disaggregation or not router.prefill_urls or not router.decode_urls:
        raise ValueError("a disaggregated router with no prefill or no decode URL")


if __name__ == "__main__":
    from importlib.metadata import version

    print(json.dumps({"engine": "sglang", "version": version("sglang"), "router": version("sglang-router")}),
          flush=True)
    for case in json.load(sys.stdin):
        print(json.dumps({"case": case["case"], "ok": (e := check(case["argv"])) is None, "error": e}), flush=True)
