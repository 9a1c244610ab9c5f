"""Catalog listings for ``planner catalog``: flat rows with units in the column names."""

from __future__ import annotations

from planner import catalog
from planner.errors import InputError


def _weakest(hw: catalog.Hardware) -> str:
    order = {"official": 0, "press": 1, "estimate": 2}
    seen = []

    def walk(obj):
        if isinstance(obj, dict):
            if "confidence" in obj and "source" in obj:
                seen.append(obj["confidence"])
            for v in obj.values():
                walk(v)
        elif isinstance(obj, list):
            for v in obj:
                walk(v)

    walk(hw.model_dump())
    return max(seen, key=order.__getitem__) if seen else "-"


def hardware_rows() -> list[dict]:
    rows = []
    for hw in catalog.hardware_catalog().values():
        chip = hw.chip
        flops = chip.peak_flops_per_s
        rows.append({
            "id": hw.id,
            "vendor": hw.vendor,
            "chips_per_rack": hw.chips_per_rack,
            "memory_per_chip": " + ".join(
                f"{t.capacity_bytes.value / 1e9:g} GB {t.tier} @ {t.bandwidth_bytes_per_s.value / 1e12:g} TB/s"
                for t in chip.memory
            ),
            "fp4_pflops": flops["fp4"].value / 1e15 if "fp4" in flops else None,
            "fp8_pflops": flops["fp8"].value / 1e15 if "fp8" in flops else None,
            "bf16_pflops": flops["bf16"].value / 1e15 if "bf16" in flops else None,
            "scale_up_chips": int(chip.scale_up.domain_chips.value),
            "rack_kw": hw.rack.power_kw.value,
            "rack_capex_musd": hw.rack.capex_usd.value / 1e6,
            "available": hw.rack.available.value.isoformat(),
            "roles": ",".join(hw.roles),
            "model_lock": hw.model_lock,
            "acquisition": hw.rack.acquisition,
            "weakest_confidence": _weakest(hw),
        })
    return rows


def model_rows() -> list[dict]:
    rows = []
    for m in catalog.model_catalog().values():
        rows.append({
            "id": m.id,
            "layers": m.layers,
            "hidden": m.hidden_size,
            "attention": m.attention,
            "experts": f"{m.experts_per_token}/{m.experts}+{m.shared_experts}" if m.is_moe else "dense",
            "total_params_b": m.total_params / 1e9,
            "active_params_b": m.active_params / 1e9,
            "kv_kb_per_token_bf16": m.kv_bytes_per_token("bf16") / 1e3,
            "native_precision": m.native_precision,
        })
    return rows


def show_entry(item_id: str) -> dict:
    hw, models = catalog.hardware_catalog(), catalog.model_catalog()
    if item_id in hw:
        entry = hw[item_id].model_dump(mode="json", exclude_none=True)
        used = sorted(sources_of(entry))
        entry["sources"] = {k: catalog.sources().get(k, {"title": "(missing from sources.yaml)"}) for k in used}
        return entry
    if item_id in models:
        return model_entry(models[item_id])
    known = list(hw) + list(models)
    raise InputError(f"unknown catalog id {item_id!r}{catalog.did_you_mean(item_id, known)}", field="ID")


def model_entry(m: catalog.Model) -> dict:
    """A model's catalog fields and what the planner derives from them (``catalog show``, ``models add``)."""
    entry = m.model_dump(mode="json", exclude_none=True)
    for name in UNLESS_SET:  # a linear or sparse attention's fields, shown only for a model that has them
        if entry.get(name) == catalog.Model.model_fields[name].default:
            entry.pop(name)
    entry["derived"] = {
        "total_params": m.total_params,
        "active_params": m.active_params,
        "attention_params_per_layer": m.attention_params_per_layer,
        "kv_bytes_per_token_bf16": m.kv_bytes_per_token("bf16"),
        "kv_bytes_per_token_fp8": m.kv_bytes_per_token("fp8"),
    }
    if m.linear_attention_layers:
        entry["derived"]["linear_attention_params_per_layer"] = m.linear_attention_params_per_layer
        entry["derived"]["state_bytes_per_sequence"] = m.state_bytes_per_sequence
    return entry


# Model fields of the attention kinds most models lack (MODEL.md 2.10), left out of an entry where at their default.
UNLESS_SET = ("attention_output_gate", "linear_attention_layers", "linear_key_heads", "linear_key_head_dim",
              "linear_value_heads", "linear_value_head_dim", "linear_conv_kernel", "linear_state_dtype",
              "indexer_heads", "indexer_head_dim")


def sources_of(obj) -> set[str]:
    found: set[str] = set()
    if isinstance(obj, dict):
        if "source" in obj and "confidence" in obj:
            found.add(obj["source"])
        for v in obj.values():
            found |= sources_of(v)
    elif isinstance(obj, list):
        for v in obj:
            found |= sources_of(v)
    return found


# The compact catalog tables (``planner catalog``; ``--detail``, JSON and CSV keep every column of the rows above)
HARDWARE_BRIEF = ["id", "vendor", "chips_per_rack", "memory", "tb_per_s", "fp8_pflops", "fp4_pflops", "rack_kw",
                  "rack_capex_musd", "available", "weakest_confidence"]
HARDWARE_DROP = ["weakest_confidence", "fp4_pflops", "available", "tb_per_s", "vendor"]
MODEL_BRIEF = ["id", "layers", "hidden", "attention", "experts", "total_params_b", "active_params_b",
               "kv_kb_per_token_bf16", "native_precision"]
MODEL_DROP = ["hidden", "layers", "attention"]
LABELS = {"chips_per_rack": "chips per rack", "memory": "memory per chip", "tb_per_s": "TB/s (fastest)",
          "fp8_pflops": "fp8 PF", "fp4_pflops": "fp4 PF", "rack_kw": "rack kW", "rack_capex_musd": "rack M USD",
          "available": "from", "weakest_confidence": "weakest source", "total_params_b": "params B",
          "active_params_b": "active B", "kv_kb_per_token_bf16": "KV kB per token (bf16)",
          "native_precision": "native"}


def hardware_brief_rows() -> list[dict]:
    """The hardware rows as the compact table shows them: the memory tiers by capacity alone (one a line), the fastest tier's
    bandwidth in its own column, the month a system is available from."""
    rows = []
    for hw, row in zip(catalog.hardware_catalog().values(), hardware_rows()):
        tiers = hw.chip.memory
        rows.append({**row, "memory": "\n".join(f"{_gb(t.capacity_bytes.value)} GB {t.tier}" for t in tiers),
                     "tb_per_s": tiers[0].bandwidth_bytes_per_s.value / 1e12 if tiers else None,
                     "available": row["available"][:7]})
    return rows


def _gb(value: float) -> str:
    gb = value / 1e9
    return f"{gb:,.0f}" if gb >= 100 else f"{gb:.3g}"
