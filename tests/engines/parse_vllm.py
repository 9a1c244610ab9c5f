"""Run inside a virtual environment holding vLLM (tests/engines/install.py): each case on standard input (JSON:
[{case, argv}], argv as ``vllm serve MODEL ...`` or ``vllm-router ...``) parsed by vLLM's own ``vllm serve``
parser, its serve-argument checks and its engine arguments' dataclass (a router by vllm-router's own parser and
checks); one JSON line out per case:
{case, ok, error}. vLLM picks its platform at import; with no GPU here, its CPU platform (VLLM_TARGET_DEVICE=cpu),
whose arguments are the same."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import sys

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")

from vllm.config.kv_transfer import KVTransferConfig  # noqa: E402
from vllm.engine.arg_utils import AsyncEngineArgs  # noqa: E402
from vllm.entrypoints.common.cli_args import make_arg_parser, validate_parsed_serve_args  # noqa: E402
from vllm.utils.argparse_utils import FlexibleArgumentParser  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vllm_checks import check_speculative  # noqa: E402


def serve_words(argv: list[str]) -> list[str]:
    """The words ``vllm serve`` parses: after ``vllm serve``."""
    if argv[:2] == ["vllm", "serve"]:
        return argv[2:]
    raise ValueError(f"not a vllm serve command: {argv[:3]}")


def check(argv: list[str]) -> str | None:
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            if argv[0] == "vllm-router":
                check_router(argv)
            else:
                check_serve(argv)
    except SystemExit:
        return err.getvalue().strip().splitlines()[-1] if err.getvalue().strip() else "the parser exited"
    except Exception as exc:  # the engine's own check refused it: its words are the finding
        return f"{type(exc).__name__}: {exc}"
    return None


def check_serve(argv: list[str]) -> None:
    """vllm serve's parser, its serve checks, the engine arguments' dataclass, the speculative config and the KV
    transfer config."""
    parser = make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))
    args = parser.parse_args(serve_words(argv))
    validate_parsed_serve_args(args)
    engine = AsyncEngineArgs.from_cli_args(args)
    check_speculative(engine.speculative_config)
    if engine.kv_transfer_config is not None:
        KVTransferConfig(**dataclasses.asdict(engine.kv_transfer_config))


def check_router(argv: list[str]) -> None:
    """vllm-router's own parser and its argument checks (the router it would start needs the replicas)."""
    from vllm_router.launch_router import parse_router_args

    router = parse_router_args(argv[1:])
    router._validate_router_args()
    if not router.prefill_urls or not router.decode_urls:
        raise ValueError("a disaggregated router with no prefill or no decode URL")


if __name__ == "__main__":
    import vllm

    print(json.dumps({"engine": "vllm", "version": vllm.__version__}), flush=True)
    for case in json.load(sys.stdin):
        print(json.dumps({"case": case["case"], "ok": (e := check(case["argv"])) is None, "error": e}), flush=True)
