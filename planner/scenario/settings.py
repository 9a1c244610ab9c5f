"""What-ifs: ``PATH=VALUE`` settings (``planner solve --set``, ``Scenario.with_``, a sweep's axes) applied to a
scenario's fields as parsed, before validation judges the result like a field of the file."""

from __future__ import annotations

import copy
import re
from typing import Any

import yaml

from planner import yaml_io
from planner.catalog import did_you_mean
from planner.errors import InputError


def parse_setting(text: str) -> tuple[str, Any]:
    """``PATH=VALUE`` from ``--set``: the value read as YAML (5, 9e6, fp8, [a, b], {k: v}, null)."""
    if not isinstance(text, str) or "=" not in text:
        raise InputError(f"expected PATH=VALUE (e.g. site.power_budget_mw=5), got {text!r}", field="--set")
    path, _, raw = text.partition("=")
    path = path.strip()
    if not path:
        raise InputError(f"expected PATH=VALUE, got {text!r}: the path is empty", field="--set")
    try:
        value = yaml_io.load_value(raw) if raw.strip() else ""
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: the value {raw!r} is not YAML ({exc.problem or exc})", field="--set") from None
    return path, value


def _item_named(items: list, name: str):
    """A list item by its ``name`` or ``id``, or by its index."""
    for i, item in enumerate(items):
        if isinstance(item, dict) and name in (item.get("name"), item.get("id")):
            return i
    if re.fullmatch(r"\d+", name) and int(name) < len(items):
        return int(name)
    return None


def apply_setting(data: dict, path: str, value) -> dict:
    """``data`` (scenario fields as parsed) with the field at ``path`` set to ``value``. The path is dotted; list
    items are named by their ``name`` (workloads) or ``id`` (custom hardware, inline models) or index; a segment may
    itself hold dots where it names an existing key or item (``workloads.llama-3.1-8b-chat.tier``). Missing
    mappings on the way are created; validation then judges the result like a field of the file."""
    data = copy.deepcopy(data)
    node, rest, walked = data, path, []
    while True:
        if isinstance(node, list):
            names = [str(x.get("name") or x.get("id")) for x in node if isinstance(x, dict)]
            keys = names + [str(i) for i in range(len(node))]
        elif isinstance(node, dict):
            keys = [str(k) for k in node]
        else:
            raise InputError(f"{path}: {'.'.join(walked) or 'the scenario'} is a value, not a mapping or list",
                             field="--set")
        # the longest existing key that the rest of the path starts with, else the next dotted segment
        match = next((k for k in sorted(keys, key=len, reverse=True) if rest == k or rest.startswith(k + ".")), None)
        head = match if match is not None else rest.split(".", 1)[0]
        rest = rest[len(head) + 1:] if len(rest) > len(head) else ""
        walked.append(head)
        if isinstance(node, list):
            i = _item_named(node, head)
            if i is None:
                raise InputError(f"{path}: no item named {head!r} in {'.'.join(walked[:-1])}"
                                 f"{did_you_mean(head, names)}", field="--set")
            if not rest:
                node[i] = value
                return data
            node = node[i]
            continue
        if not rest:
            node[head] = value
            return data
        if head not in node or node[head] is None:
            node[head] = {}
        node = node[head]


def with_settings(data: dict, settings) -> dict:
    """``data`` with every ``PATH=VALUE`` of ``settings`` applied in order."""
    for text in settings or ():
        path, value = parse_setting(text)
        data = apply_setting(data, path, value)
    return data
