"""What tests/engines/parse_vllm.py and parse_dynamo.py both check, with vLLM's own definitions (run inside an
engine environment; vLLM imported, its platform chosen by the caller)."""

from __future__ import annotations

import dataclasses
import typing

from vllm.config.speculative import MTPModelTypes, SpeculativeConfig, SpeculativeMethod


def check_speculative(spec: dict | None) -> None:
    """The speculative config's keys and method against vLLM's SpeculativeConfig and SpeculativeMethod (building
    it needs the model's config, which is not here)."""
    if spec:
        fields = {f.name for f in dataclasses.fields(SpeculativeConfig)}
        if set(spec) - fields:
            raise ValueError(f"speculative config keys {sorted(set(spec) - fields)} are not SpeculativeConfig's")
        if spec.get("method") not in typing.get_args(SpeculativeMethod) and "method" in spec:
            raise ValueError(f"speculative method {spec['method']!r} is not one of SpeculativeMethod")
        if spec.get("method") in typing.get_args(MTPModelTypes) and spec["method"] != "mtp":
            raise ValueError(f"speculative method {spec['method']!r} is deprecated into 'mtp'")
