"""Problems across fields of a scenario, each as ``(loc, message)``: ids that name nothing (``_reference_problems``),
per-period values and periods (``_period_problems``), what min_carbon cannot price (``_carbon_problems``),
efficiency parameters (``_efficiency_problems``), workloads (``_workload_problems``). ``Scenario``'s validators raise
the first of each as a validation error at its ``loc``; ``s`` is a ``planner.scenario.schema.Scenario`` (taken, not
imported: the schema imports this module)."""

from __future__ import annotations

import math
import re
from typing import Any

from planner.catalog import ADD_A_MODEL, did_you_mean, hardware_catalog, model_catalog
from planner.perf.calibration import calibration_data
from planner.perf.pack import EFFICIENCY_PARAMS, efficiency_table
from planner.scenario.overrides import _apply_overrides, _OverrideError
from planner.vocabulary import ONE_SITE, SITE_SEP


def _unknown(kind: str, name: str, known, where: str) -> str:
    text = f"unknown {kind} id {name!r}{did_you_mean(name, known)}; expected a catalog id or an id from {where}"
    return text + (f" ({ADD_A_MODEL})" if kind == "model" else "")


def _custom_id_problems(items, catalog, loc):
    seen: set[str] = set()
    families = efficiency_table()
    for i, item in enumerate(items):
        if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", item.id):
            yield (*loc, i, "id"), (f"expected an id of lower-case letters, digits, '.', '_' and '-' (no '+', "
                                    f"'/' or spaces), got {item.id!r}")
        if getattr(item, "family", None) is not None and item.family not in families:
            yield (*loc, i, "family"), (f"unknown efficiency family {item.family!r}"
                                        f"{did_you_mean(item.family, families)}; known: {', '.join(families)}")
        if item.id in catalog:
            yield (*loc, i, "id"), f"{item.id!r} is already a catalog id; choose a new id (or use overrides)"
        elif item.id in seen:
            yield (*loc, i, "id"), f"duplicate id {item.id!r}"
        seen.add(item.id)


def _reference_problems(s):
    """(loc, message) for every id that names nothing, duplicate, or invalid override."""
    hw, models = s.hardware, s.resolved_models()
    known_hw = {**hardware_catalog(), **{h.id: h for h in hw.custom}}
    yield from _custom_id_problems(hw.custom, hardware_catalog(), ("hardware", "custom"))
    yield from _custom_id_problems(s.models, model_catalog(), ("models",))
    for i, h in enumerate(hw.custom):
        if h.model_lock is not None and h.model_lock not in models:
            yield ("hardware", "custom", i, "model_lock"), _unknown("model", h.model_lock, models, "models")
    for i, hw_id in enumerate(hw.allow or []):
        if hw_id not in known_hw:
            yield ("hardware", "allow", i), _unknown("hardware", hw_id, known_hw, "hardware.custom")
    declines = hw.price_decline_per_year if isinstance(hw.price_decline_per_year, dict) else {}
    for field, ids in (("max_racks", hw.max_racks), ("min_racks", hw.min_racks), ("overrides", hw.overrides),
                       ("price_decline_per_year", declines), ("capex_usd_by_period", hw.capex_usd_by_period)):
        for hw_id in ids:
            if hw_id not in known_hw:
                yield ("hardware", field, hw_id), _unknown("hardware", hw_id, known_hw, "hardware.custom")
    for hw_id, fields in hw.overrides.items():
        if hw_id in known_hw:
            try:
                _apply_overrides(known_hw[hw_id], fields, type(s))
            except _OverrideError as exc:
                yield ("hardware", "overrides", hw_id, exc.key), exc.message
    for i, e in enumerate(s.installed):
        if e.hardware not in known_hw:
            yield ("installed", i, "hardware"), _unknown("hardware", e.hardware, known_hw, "hardware.custom")
        if e.bought > s.start_date:
            yield ("installed", i, "bought"), (f"installed racks are bought on or before start_date "
                                               f"({s.start_date}), got {e.bought}")
    yield from _workload_problems(s.workloads, models, known_hw)
    yield from _efficiency_problems(s.efficiency, known_hw)
    for i, m in enumerate(s.measurements):
        if m.hardware not in known_hw:
            yield ("measurements", i, "hardware"), _unknown("hardware", m.hardware, known_hw, "hardware.custom")
        if m.model not in models:
            yield ("measurements", i, "model"), _unknown("model", m.model, models, "models")


def _site_problems(s):
    """(loc, message) for several sites (docs/OPTIMIZER.md 21): unique names a rack type can carry, site's limits
    and installed racks moved to the sites, known ids, workloads' sites that exist (a build-out over several sites
    takes each site's limits per period as a single site's: ``_period_problems``)."""
    if not s.sites:
        for i, w in enumerate(s.workloads):
            if w.sites is not None and w.sites != [ONE_SITE]:
                yield ("workloads", i, "sites"), (f"names sites {w.sites} but the scenario has one site (site:); "
                                                  f"give sites: [{{name: ...}}, ...] to plan several")
        return
    names = [e.name for e in s.sites]
    for i, e in enumerate(s.sites):
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", e.name):
            yield ("sites", i, "name"), (f"expected a name of letters, digits, '.', '_' and '-', got {e.name!r} (a "
                                         f"plan names its racks system{SITE_SEP}site)")
        if e.name in names[:i]:
            yield ("sites", i, "name"), f"duplicate site name {e.name!r}"
    for key in ("power_budget_mw", "max_racks", "grid_kg_co2_per_mwh"):
        if getattr(s.site, key) is not None:
            yield ("site", key), f"with sites, give each site its {key} (sites: [{{name, {key}}}]), not site.{key}"
    if s.installed:
        yield ("installed",), "with sites, list installed racks under their site (sites: [{name, installed}])"
    known_hw = {**hardware_catalog(), **{h.id: h for h in s.hardware.custom}}
    for i, e in enumerate(s.sites):
        for k, hw_id in enumerate(e.allow or []):
            if hw_id not in known_hw:
                yield ("sites", i, "allow", k), _unknown("hardware", hw_id, known_hw, "hardware.custom")
        for k, entry in enumerate(e.installed):
            if entry.hardware not in known_hw:
                yield ("sites", i, "installed", k, "hardware"), _unknown("hardware", entry.hardware, known_hw,
                                                                         "hardware.custom")
            if entry.bought > s.start_date:
                yield ("sites", i, "installed", k, "bought"), (f"installed racks are bought on or before start_date "
                                                               f"({s.start_date}), got {entry.bought}")
    for i, w in enumerate(s.workloads):
        for k, site in enumerate(w.sites or []):
            if site not in names:
                yield ("workloads", i, "sites", k), (f"unknown site {site!r}{did_you_mean(site, names)}; expected one "
                                                     f"of {', '.join(names)}")
    if s.objective == "min_carbon":
        for i, e in enumerate(s.sites):
            if e.grid_kg_co2_per_mwh is None:
                yield ("sites", i, "grid_kg_co2_per_mwh"), "min_carbon needs every site's grid emissions"


def _period_problems(s):
    """(loc, message) for per-period values without periods, lists of the wrong length, and bad periods."""
    # each workload's rate under the name its file gave it (issue 43: a peak's problem named requests_per_s)
    lists: list[tuple[tuple, Any]] = [
        (("workloads", i, "peak_requests_per_s" if w.peak_requests_per_s is not None else "requests_per_s"),
         w.requests_per_s) for i, w in enumerate(s.workloads)]
    lists += [(("site", k), getattr(s.site, k)) for k in ("power_budget_mw", "max_racks")]
    lists += [(("sites", i, k), getattr(e, k)) for i, e in enumerate(s.sites or ()) for k in ("power_budget_mw",
                                                                                             "max_racks")]
    if s.periods is None:
        for loc, value in lists:
            if isinstance(value, list):
                yield loc, "a list gives one value per period: set periods, or give one number"
        for i, w in enumerate(s.workloads):
            if w.growth_per_year is not None:
                yield ("workloads", i, "growth_per_year"), "growth_per_year needs periods"
        if s.service_life_years and not s.installed:
            yield ("service_life_years",), "service_life_years needs periods or installed racks"
        if s.demand_scenarios:
            yield ("demand_scenarios",), "demand_scenarios needs periods"
        if s.hardware.capex_usd_by_period:
            yield ("hardware", "capex_usd_by_period"), "capex_usd_by_period needs periods"
        return
    if s.periods[0] != s.start_date:
        yield ("periods", 0), f"the first period starts on start_date ({s.start_date}), got {s.periods[0]}"
    for k in range(1, len(s.periods)):
        if s.periods[k] <= s.periods[k - 1]:
            yield ("periods", k), f"periods must increase: {s.periods[k]} is not after {s.periods[k - 1]}"
    span = (s.periods[-1] - s.start_date).days / 365.25
    if s.horizon_years <= span:
        yield ("horizon_years",), (f"the horizon ({s.horizon_years:g} years from start_date) must reach past the "
                                   f"last period's start ({span:.3g} years in)")
    lists += [(("hardware", "capex_usd_by_period", k), v) for k, v in s.hardware.capex_usd_by_period.items()]
    for loc, value in lists:
        if isinstance(value, list) and len(value) != len(s.periods):
            yield loc, f"expected one value per period ({len(s.periods)}), got {len(value)}"
    for i, w in enumerate(s.workloads):
        if w.growth_per_year is not None and isinstance(w.requests_per_s, list):
            yield ("workloads", i, "growth_per_year"), "give requests_per_s per period or growth_per_year, not both"
    if s.demand_scenarios:
        total = sum(d.probability for d in s.demand_scenarios)
        if not math.isclose(total, 1.0, rel_tol=1e-6):
            yield ("demand_scenarios",), f"the probabilities sum to {total:g}, expected 1"
        names = [d.name for d in s.demand_scenarios]
        for i, name in enumerate(names):
            if names.index(name) != i:
                yield ("demand_scenarios", i, "name"), f"duplicate demand scenario name {name!r}"
        known = {w.name for w in s.workloads}
        for i, d in enumerate(s.demand_scenarios):
            for name in (d.multiplier if isinstance(d.multiplier, dict) else {}):
                if name not in known:
                    yield ("demand_scenarios", i, "multiplier", name), f"no workload named {name!r}"


def _carbon_problems(sc):
    """What min_carbon cannot price (docs/OPTIMIZER.md 15): no grid intensity, a build-out (not yet), an API offer
    (no emissions figure of its own), a system without its making's emissions."""
    if sc.site.grid_kg_co2_per_mwh is None and not sc.sites:  # several sites: each its own (_site_problems)
        yield ("site", "grid_kg_co2_per_mwh"), ("min_carbon needs the grid's emissions: set site.grid_kg_co2_per_mwh "
                                                "(kg CO2e per MWh; e.g. about 370 for the US average in 2024)")
        return
    if sc.periods:
        yield ("objective",), "a build-out does not take min_carbon yet: plan one period with it"
    for i, w in enumerate(sc.workloads):
        if w.api:
            yield ("workloads", i, "api"), ("min_carbon cannot price an api offer (no emissions figure of its own): "
                                            "drop the offer or use another objective")
    for hw_id, hw in sc.resolved_hardware().items():
        if hw.rack.embodied_kg_co2e is None:
            yield ("hardware",), (f"min_carbon needs {hw_id}'s rack.embodied_kg_co2e (the emissions of making one "
                                  f"rack): give it in hardware.overrides.{hw_id} or leave {hw_id} out of "
                                  f"hardware.allow")


def _efficiency_problems(efficiency: dict, known_hw: dict):
    bounds = calibration_data()["bounds"]
    for family, params in efficiency.items():
        if family not in efficiency_table() and family not in known_hw:
            yield ("efficiency", family), (f"unknown hardware family or system {family!r}; expected a family ("
                                           f"{', '.join(sorted(efficiency_table()))}) or a hardware id")
            continue
        for name, value in params.items():
            if name not in EFFICIENCY_PARAMS:
                yield ("efficiency", family, name), (f"unknown parameter {name!r}; expected one of "
                                                     f"{', '.join(EFFICIENCY_PARAMS)}")
            elif not bounds[name][0] <= value <= bounds[name][1]:
                yield ("efficiency", family, name), (f"{value:g} is outside the calibration's bounds "
                                                     f"[{bounds[name][0]:g}, {bounds[name][1]:g}]")


def _workload_problems(workloads: list, models, known_hw):
    first: dict[str, int] = {}
    for j, w in enumerate(workloads):
        if w.name in first:
            yield ("workloads", j, "name"), f"duplicate workload name {w.name!r} (also workloads[{first[w.name]}])"
        first.setdefault(w.name, j)
        if w.model not in models:
            yield ("workloads", j, "model"), _unknown("model", w.model, models, "models")
        spec = w.speculative
        if spec.method == "mtp" and w.model in models and models[w.model].mtp_layers == 0:
            yield (("workloads", j, "speculative", "method"),
                   f"{w.model} ships no multi-token-prediction layers (mtp_layers 0): use eagle or draft_model")
        if spec.draft_model is not None:
            if spec.draft_model not in models:
                yield (("workloads", j, "speculative", "draft_model"),
                       _unknown("model", spec.draft_model, models, "models"))
            elif w.model in models and models[spec.draft_model].vocab_size != models[w.model].vocab_size:
                yield (("workloads", j, "speculative", "draft_model"),
                       f"{spec.draft_model} has another vocabulary than {w.model} ({models[spec.draft_model].vocab_size}"
                       f" vs {models[w.model].vocab_size}): a drafter must share the target's tokenizer")
        for k, hw_id in enumerate(w.allow_hardware or []):
            if hw_id not in known_hw:
                yield ("workloads", j, "allow_hardware", k), _unknown("hardware", hw_id, known_hw, "hardware.custom")
