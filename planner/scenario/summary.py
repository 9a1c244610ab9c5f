"""What a scenario resolves to, for ``planner validate``: the hardware a plan may use and why the rest may not,
the installed racks in service, each workload's demand at its peak, and the assumptions a reader should know about
(warnings). The demands come from ``planner.fleet.problem``, a layer above (imported where used)."""

from __future__ import annotations

from planner.measurements.curves import curves_for, operating_point
from planner.perf.speculative import acceptance_words, auto_methods, auto_words
from planner.scenario.schema import Scenario
from planner.vocabulary import AUTO_SPECULATIVE, SITE_SEP


def resolved_summary(sc: Scenario) -> dict:
    """The hardware a plan may use and why the rest may not, each workload's demand at its peak, and the
    assumptions a reader should know about (warnings), for ``planner validate``."""
    from planner.fleet.problem import demands_of

    warnings = []
    for w in sc.workloads:
        if "peak_to_mean" not in w.model_fields_set:
            warnings.append(f"workload {w.name}: peak_to_mean not given, so the fleet is sized for the mean rate "
                            f"(1.0)")
        if w.kind == "agentic" and "prefix_cache_hit" not in w.model_fields_set:
            warnings.append(f"workload {w.name}: agentic without prefix_cache_hit, so every call prefills its whole "
                            f"prompt (0.0); a session's calls share most of theirs (set the share its cache holds)")
        if w.speculative.method == AUTO_SPECULATIVE:
            methods = auto_methods(sc.resolved_models()[w.model])
            if len(methods) > 1:
                warnings.append(f"workload {w.name}: speculative auto: {auto_words(methods, w.model)} "
                                f"(docs/MODEL.md 3.4)")
            continue
        spec = w.speculation
        if spec.method == "none":
            continue
        warnings.append(f"workload {w.name}: speculative decoding "
                        f"{acceptance_words(spec.method, w.model, spec.acceptance, spec.acceptance_by_k)} "
                        f"(docs/MODEL.md 3.4)")
    if sc.sites:
        for e in sc.sites:
            if e.power_budget_mw is None:
                warnings.append(f"sites.{e.name}.power_budget_mw not given: power does not limit that site")
    elif sc.site.power_budget_mw is None:
        warnings.append("site.power_budget_mw not given: power does not limit the plan")
    warnings.extend(_measurement_notes(sc))
    past = sc.installed_past_life() if not sc.sites else {
        f"{h}{SITE_SEP}{name}": n for name in sc.site_names()
        for h, n in sc.at_site(name).installed_past_life().items()}
    for hw_id, n in sorted(past.items()):
        warnings.append(f"installed {hw_id}: {n} racks past their service life ({sc.service_life():g} years) at "
                        f"start_date, left out")
    return {
        "hardware": {"allowed": sorted(sc.resolved_hardware()), "excluded": sc.excluded_hardware()},
        "installed": {h: {"racks": d["racks"], "retire_by": d["retire_by"].isoformat()}
                      for h, d in sc.installed_in_service().items()},
        "demands": [d.to_dict() for d in demands_of(sc)],
        "warnings": warnings,
    }


def _measurement_notes(sc: Scenario) -> list[str]:
    """What the measurements will do: each measured (workload, system, precision, role, chips) and the
    operating point it gives, or that it misses the tier; rows no workload uses."""
    from planner.fleet.problem import demands_of

    if not sc.measurements:
        return []
    notes, used = [], set()
    allowed, models = sc.resolved_hardware(), sc.resolved_models()
    efficiency = sc.efficiencies(allowed)
    for d in demands_of(sc):
        for hw in allowed.values():
            for c in curves_for(d, models[d.model], hw, sc.measurements, None, efficiency):
                used.add((hw.id, d.model))
                point = operating_point(c, d.min_tps_per_user, d.ttft_s)
                read = (f"read at concurrency {point.concurrency:g}: {point.tps_per_user:.4g} tok/s/user"
                        if point else "misses the tier or TTFT at every point: no option there")
                notes.append(f"workload {d.name}: {hw.id} {c.precision} {c.role} on {c.chips} chips from "
                             f"measurements ({c.describe()}), {read}; no option from the model there")
    idle = sorted({f"{m.hardware}/{m.model}" for m in sc.measurements if (m.hardware, m.model) not in used})
    if idle:
        notes.append(f"measurements not used by any workload (system not allowed, another model or speculative "
                     f"method): {', '.join(idle)}")
    return notes
