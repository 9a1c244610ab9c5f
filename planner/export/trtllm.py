"""TensorRT-LLM: one ``trtllm-serve`` command per allocation row with its LLM API options file (written against
TensorRT-LLM 1.1.0, the PyTorch backend's LlmArgs)."""

from __future__ import annotations

import yaml

from planner.export.common import (NEED, PORT, PORT_LINE, Launch, ScriptTarget, drafter_argument, header_lines,
                                   model_argument, row_comment, shell_script)
from planner.export.rows import (Row, check_common, disaggregated, draft_tokens, hf_model_id,
                                 kv_cache_dtype, multinode_skip, tokens_per_step)

ENGINE = "TensorRT-LLM"
VERSION = "1.1.0"
RELEASE = "1.1.0"  # the plain release, for the files' first comment line
REFERENCE = "https://nvidia.github.io/TensorRT-LLM/1.1.0/llm-api/reference.html"
PRECISIONS = ("bf16", "fp8", "fp4", "w4a16")
ONLINE: dict[str, list[str]] = {}  # the PyTorch backend reads the quantization from a ModelOpt checkpoint only
# The planner's speculative methods as TensorRT-LLM's speculative_config decoding_type
METHODS = {"none": None, "mtp": "MTP", "eagle": "Eagle", "draft_model": "DraftTarget"}
TRANSFER_BACKEND = "NIXL"  # the plan names none; NIXL is the one all four targets document
OPTIONS_FILE = "$OPTIONS_FILE"


def llm_api_options(row: Row) -> tuple[str, dict, dict[str, str]]:
    """The model, the LLM API options (extra_llm_api_options YAML) of a row, and the values the operator must
    supply."""
    check_common(row, "trtllm", ENGINE, PRECISIONS, METHODS)
    model, _, needs = model_argument(row, hf_model_id(row, ENGINE), ONLINE)
    tp = int(row["tensor_parallel"])
    options = {"tensor_parallel_size": tp, "pipeline_parallel_size": int(row["pipeline_parallel"]),
               # with expert parallel, attention runs data-parallel on each chip and the experts spread over them
               "moe_expert_parallel_size": tp if row["expert_parallel"] else 1,
               "enable_attention_dp": bool(row["expert_parallel"]),
               "max_batch_size": int(row["batch"]), "max_num_tokens": tokens_per_step(row),
               "kv_cache_config": {"dtype": kv_cache_dtype(row)}}
    spec, spec_needs = speculative_config(row)
    if spec is not None:
        options["speculative_config"] = spec
    if disaggregated(row):
        options["cache_transceiver_config"] = {"backend": TRANSFER_BACKEND}
    return model, options, {**needs, **spec_needs}


def speculative_config(row: Row) -> tuple[dict | None, dict[str, str]]:
    method = row["speculative"] or "none"
    if method == "none":
        return None, {}
    if method == "mtp":  # the model's own MTP layers, applied k times
        return {"decoding_type": "MTP", "num_nextn_predict_layers": draft_tokens(row)}, {}
    path, needs = drafter_argument(row, method)
    return {"decoding_type": METHODS[method], "max_draft_len": draft_tokens(row), "speculative_model_dir": path}, needs


class TrtllmTarget(ScriptTarget):
    key, engine, version, release, reference = "trtllm", ENGINE, VERSION, RELEASE, REFERENCE

    def skip_reason(self, row: Row) -> str | None:
        return super().skip_reason(row) or multinode_skip(
            row, "TensorRT-LLM runs one under MPI or Slurm (mpirun or srun with trtllm-llmapi-launch)")

    def launch(self, row: Row) -> Launch:
        model, options, needs = llm_api_options(row)
        return Launch(row, ["trtllm-serve", model, "--extra_llm_api_options", OPTIONS_FILE, "--port", PORT], options,
                      needs)

    def script(self, plan, launch: Launch) -> str:
        # The options file is written by the script itself, so that the values the operator supplies go into it:
        # the serializer's YAML in a quoted heredoc (nothing in it expands), then each operator variable put in
        # place of its marker by bash's own substitution, which runs nothing of what it inserts.
        body = yaml.safe_dump(operator_markers(launch.options, launch.needs), sort_keys=False).rstrip("\n")
        end = heredoc_end(body)
        preamble = [PORT_LINE, f"OPTIONS_FILE=\"${{OPTIONS_FILE:-{launch.row.slug}.options.yaml}}\"",
                    f"options=$(cat <<'{end}'", body, end, ")"]
        preamble += [f'options="${{options//{marker(var)}/${var}}}"' for var in launch.needs]
        preamble += ['printf \'%s\\n\' "$options" > "$OPTIONS_FILE"']
        comments = header_lines(self, plan) + row_comment(launch.row)
        return shell_script(launch, comments, preamble, ("OPTIONS_FILE", "PORT"))


def marker(var: str) -> str:
    """The text an operator variable stands as in the options file until the script substitutes it."""
    return f"@@{var}@@"


def operator_markers(value, needs):
    """``value`` with each ``$VAR`` the operator supplies written as its marker (the rest as it is)."""
    if isinstance(value, dict):
        return {k: operator_markers(v, needs) for k, v in value.items()}
    if isinstance(value, list):
        return [operator_markers(v, needs) for v in value]
    if isinstance(value, str):
        return NEED.sub(lambda m: marker(m.group(1)) if m.group(1) in needs else m.group(0), value)
    return value


def heredoc_end(body: str) -> str:
    """A heredoc delimiter that no line of ``body`` is."""
    end, lines = "PLANNER_OPTIONS_END", set(body.splitlines())
    while end in lines:
        end += "_"
    return end


TARGET = TrtllmTarget()
