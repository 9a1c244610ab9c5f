"""Self-contained HTML reports: one file, inline CSS, charts as inline SVG (planner.report.charts), no script, no link,
no font or image fetched from anywhere, so it opens on an air-gapped laptop.

* ``render_plan_html(plan, frontier_points_by_model, reason)``: a solved (or infeasible) plan.
* ``render_frontier_html(points, title)``: the frontier chart alone, with its points as a table.
(``planner.fleet.frontiers.frontier_points_for_plan`` gives a plan's frontier points, ready for ``render_plan_html``.)
* ``simulation_section(sim)``, ``render_simulation_html(sim, title)``: a plan simulated at its peak (the dict of
  ``planner simulate --format json``), as a section of the plan's report or a page of its own.
* ``write_html(text, path)``: atomic write (temp file + os.replace).
"""

from __future__ import annotations

import html

from planner import __version__
from planner.fleet.finance import mean_tokens_per_year
from planner.perf.frontier import best_at_tiers
from planner.report import charts
from planner.report.buildout import period_rows, summary_lines as buildout_lines
from planner.report.files import atomic_write
from planner.report.render import fmt
from planner.report.summary import headline, summary_lines
from planner.sweep.report import (axis_columns, cost_column, cost_label, cost_unit, regret_unit, robust_lines,
                                  sensitivity, summary_lines as sweep_lines, system_shares)
from planner.vocabulary import TIERS

ALTERNATIVE_ROWS_PER_WORKLOAD = 6  # the cheapest options shown for each workload

CSS = """
:root { color-scheme: light; }
body { font-family: "DejaVu Sans", "Segoe UI", Helvetica, Arial, sans-serif; margin: 0; color: #1a1a1a;
       background: #f6f7f9; line-height: 1.4; }
header { background: #1f3a5f; color: #fff; padding: 18px 32px; }
header h1 { margin: 0 0 4px 0; font-size: 22px; }
header p { margin: 0; opacity: .85; font-size: 13px; }
main { padding: 16px 32px 48px 32px; max-width: 1400px; }
section { background: #fff; border: 1px solid #dde1e6; border-radius: 6px; padding: 14px 18px; margin: 16px 0; }
h2 { font-size: 17px; margin: 0 0 10px 0; color: #1f3a5f; }
h3 { font-size: 14px; margin: 14px 0 6px 0; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; }
.card { flex: 1 1 180px; border: 1px solid #dde1e6; border-radius: 6px; padding: 10px 14px; background: #fbfcfd; }
.card .label { font-size: 12px; color: #555; text-transform: uppercase; letter-spacing: .03em; }
.card .value { font-size: 22px; font-weight: bold; margin-top: 4px; }
.card .note { font-size: 12px; color: #555; }
.over { color: #b00020; }
table { border-collapse: collapse; font-size: 12px; margin: 6px 0; }
th, td { border: 1px solid #dde1e6; padding: 3px 7px; text-align: right; white-space: nowrap; }
th { background: #eef1f5; position: sticky; top: 0; }
td.text, th.text { text-align: left; }
.scroll { overflow-x: auto; max-width: 100%; }
.chart svg { max-width: 100%; height: auto; }
.explanation { border-left: 5px solid #b00020; background: #fff4f4; }
.explanation pre { white-space: pre-wrap; font-size: 13px; margin: 0; }
.muted { color: #666; font-size: 12px; }
.lead { font-size: 17px; font-weight: 600; }
footer { color: #666; font-size: 12px; padding: 0 32px 24px 32px; }
"""


# ---- formatting ---------------------------------------------------------------------------------------------------
def _e(value) -> str:
    return html.escape(str(value), quote=True)


def _cell(value) -> str:
    return _e(fmt(value))


def _money(x) -> str:
    if x is None:
        return "-"
    for div, suffix in ((1e9, " B"), (1e6, " M"), (1e3, " k")):
        if abs(x) >= div:
            return f"${x / div:,.2f}{suffix}"
    return f"${x:,.2f}"


def _num(x, digits: int = 3) -> str:
    if x is None:
        return "-"
    for div, suffix in ((1e12, " T"), (1e9, " G"), (1e6, " M"), (1e3, " k")):
        if abs(x) >= div:
            return f"{x / div:,.{digits}g}{suffix}"
    return f"{x:,.{digits}g}"


def table_html(rows: list[dict], columns: list[str] | None = None, caption: str | None = None) -> str:
    """An HTML table of flat dicts; text columns left-aligned, numbers right-aligned (render.fmt formatting)."""
    if not rows:
        return '<p class="muted">(none)</p>'
    cols = columns or list(rows[0])
    cols = [c for c in cols if any(c in r for r in rows)]
    text_cols = {c for c in cols if all(isinstance(r.get(c), str) or r.get(c) is None for r in rows)}
    out = ['<div class="scroll"><table>']
    if caption:
        out.append(f"<caption>{_e(caption)}</caption>")
    out.append("<thead><tr>" + "".join(
        f'<th class="{"text" if c in text_cols else "num"}">{_e(c)}</th>' for c in cols) + "</tr></thead><tbody>")
    for r in rows:
        out.append("<tr>" + "".join(
            f'<td class="{"text" if c in text_cols else "num"}">{_cell(r.get(c))}</td>' for c in cols) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _rows(df) -> list[dict]:
    return df.to_dicts() if df is not None and len(df) else []


def _card(label: str, value: str, note: str = "", cls: str = "") -> str:
    note_html = f'<div class="note">{_e(note)}</div>' if note else ""
    return (f'<div class="card"><div class="label">{_e(label)}</div>'
            f'<div class="value {cls}">{_e(value)}</div>{note_html}</div>')


def _chart(fig) -> str:
    try:
        return f'<div class="chart">{charts.svg_string(fig)}</div>'
    finally:
        charts._close(fig)


def _document(title: str, subtitle: str, body: list[str]) -> str:
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        # No network at all: forbid every fetch, allow only the inline style and inline SVG/data images.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "img-src data:\">",
        f"<title>{_e(title)}</title>",
        f"<style>{CSS}</style>",
        "</head>",
        "<body>",
        f"<header><h1>{_e(title)}</h1><p>{_e(subtitle)}</p></header>",
        "<main>",
        *body,
        "</main>",
        f"<footer>planner {_e(__version__)}: a self-contained report (no scripts, no network).</footer>",
        "</body>",
        "</html>",
        "",
    ])


# ---- the plan report ----------------------------------------------------------------------------------------------
def tokens_per_year(plan) -> float:
    """Mean output tokens a year served by the plan (peak demand / peak_to_mean x served share)."""
    if plan.workloads is None or not len(plan.workloads) or not plan.inputs:
        return 0.0
    peak_to_mean = {d["name"]: d["peak_to_mean"] for d in plan.inputs["demands"]}
    return sum(mean_tokens_per_year(r["demand_output_tokens_per_s"] * r["served_share"],
                                    peak_to_mean.get(r["workload"], 1.0)) for r in plan.workloads.iter_rows(named=True))


def summary_cards(plan) -> str:
    t = plan.totals or {}
    if not t:
        return '<p class="muted">No fleet: the scenario has no feasible plan.</p>'
    cost = t.get("annual_cost_usd")
    tpy = tokens_per_year(plan)
    per_mtok = cost / (tpy / 1e6) if cost is not None and tpy > 0 else None
    facility, budget = t.get("facility_power_mw"), t.get("power_budget_mw")
    if budget:
        power_value = f"{facility:,.1f} / {budget:,.0f} MW"
        power_note = f"facility power against budget ({facility / budget:.0%}); rack power {t.get('power_mw', 0):,.1f} MW"
    else:
        power_value = f"{facility:,.1f} MW"
        power_note = f"facility power (no budget); rack power {t.get('power_mw', 0):,.1f} MW"
    cards = [
        _card("fleet cost per year", _money(cost), "capex annuity + energy + maintenance"),
        _card("capex", _money(t.get("capex_usd")), f"{t.get('racks', 0):,} racks, {t.get('chips', 0):,} chips"),
        _card("power", power_value, power_note, "over" if budget and facility > budget + 1e-9 else ""),
        _card("output tokens/s", _num(t.get("output_tokens_per_s")),
              f"{_num(t.get('output_tokens_per_s_per_mw'))} tokens/s per MW of rack power"),
        _card("$ per million tokens", f"${per_mtok:,.4g}" if per_mtok is not None else "-",
              "annual cost / mean output tokens per year"),
    ]
    if t.get("revenue_usd_per_year"):
        cards.append(_card("revenue per year", _money(t["revenue_usd_per_year"]),
                           f"profit {_money(t.get('profit_usd_per_year'))}"))
    return '<div class="cards">' + "".join(cards) + "</div>"


FLEET_COLS = ["hardware", "racks", "racks_installed", "racks_new", "racks_retired", "chips", "chips_rented",
              "rental_usd_per_year", "breakeven_utilization", "chips_used", "chip_utilization", "power_mw", "facility_power_mw",
              "capex_usd", "annual_cost_usd", "capex_confidence"]
ALLOC_COLS = ["workload", "role", "hardware", "replicas", "chips_per_replica", "tensor_parallel",
              "pipeline_parallel", "expert_parallel", "batch", "precision", "speculative", "draft_tokens", "tps_per_user",
              "ttft_s", "ttft_p90_s", "output_tokens_per_s", "prefill_tokens_per_s", "utilization", "prefill_share",
              "power_mw", "engines", "source"]
WORKLOAD_COLS = ["workload", "model", "tier", "min_tps_per_user", "demand_output_tokens_per_s",
                 "served_output_tokens_per_s", "served_share", "tps_per_user", "ttft_s", "ttft_target_s",
                 "annual_cost_usd", "power_mw", "cost_usd_per_mtok", "cost_usd_per_mtok_input",
                 "cost_usd_per_mtok_cached_input", "cost_usd_per_mtok_output", "output_tokens_per_s_per_mw",
                 "price_usd_per_mtok", "revenue_usd_per_year"]


def render_plan_html(plan, frontier_points_by_model: dict[str, list] | None = None, reason: str | None = None,
                     title: str | None = None, simulation: dict | None = None, whatifs: dict | None = None) -> str:
    """The whole plan as one self-contained HTML page. ``plan`` may be None (infeasible with nothing to show):
    then the page carries ``reason`` alone. ``frontier_points_by_model``: model -> points (planner.perf.frontier
    dicts) or -> {"points": [...], "chosen": [...]} as ``frontier_points_for_plan`` returns. ``simulation``: the
    plan already simulated (``SimResult.to_dict()``), shown after the workloads; ``whatifs``: the re-solves already
    made (``planner.fleet.whatif.whatif_tables``: what each binding limit costs, each family alone), shown after the
    answer. The page only draws: it solves nothing."""
    name = title or (plan.scenario if plan is not None else "scenario")
    status = plan.status if plan is not None else "infeasible"
    body = []
    if reason:
        body.append('<section class="explanation" id="explanation"><h2>Why there is no feasible plan</h2>'
                    f"<pre>{_e(reason)}</pre></section>")
    if plan is not None:
        d = plan.to_dict()
        lines = "".join(f"<li>{_e(x)}</li>" for x in summary_lines(d, reason)[1:])
        body.append(f'<section id="answer"><h2>The answer</h2><p class="lead">{_e(headline(d))}</p>'
                    f"<ul>{lines}</ul></section>")
        worth = (whatifs or {}).get("limits")
        if worth:
            body.append('<section id="limits"><h2>What the binding limits cost</h2><p class="muted">Each binding '
                        "limit loosened by one unit and the plan solved again: worth is what one more unit saves "
                        "of the plan's objective, in its unit (USD a year, IT watts, kg CO2e a year), beside the "
                        "annual cost it saves; within_gap marks a saving smaller than the solvers' gap, which says "
                        "only that the unit is worth little.</p>"
                        f"{table_html(worth)}</section>")
        alone = (whatifs or {}).get("families")
        if alone:
            body.append('<section id="single-family"><h2>Beside the plan: one family alone</h2><p class="muted">'
                        "The best fleet of each hardware family by itself (SRAM decode machines with the other "
                        "systems allowed for prefill), solved like the plan: what the mix is worth against the "
                        "simplest fleets a buyer could choose instead.</p>"
                        f"{table_html(alone)}</section>")
        body.append(f'<section id="summary"><h2>Summary</h2>{summary_cards(plan)}'
                    f'<p class="muted">objective: {_e(plan.objective)}; solver: {_e(plan.solver.get("name"))} '
                    f'({_e(plan.solver.get("status"))}, gap {_cell(plan.solver.get("relative_gap"))}).</p></section>')
        has_fleet = plan.fleet is not None and len(plan.fleet) > 0
        fleet_html = table_html(_rows(plan.fleet), FLEET_COLS)
        if has_fleet:
            fleet_html = _chart(charts.fleet_figure(plan)) + fleet_html
        body.append(f'<section id="fleet"><h2>Fleet by hardware</h2>{fleet_html}</section>')
        if plan.totals.get("sites") is not None:  # several sites (docs/OPTIMIZER.md 21): what goes where
            body.append('<section id="sites"><h2>Sites</h2><p class="muted">each site within its own power budget and '
                        'floor space, its racks priced at its own energy and PUE; a rack type is system@site.</p>'
                        f'{table_html(plan.totals["sites"])}</section>')
        body.append('<section id="allocation"><h2>Allocation per workload and role</h2>'
                    f"{table_html(_rows(plan.allocation), ALLOC_COLS)}</section>")
        body.append('<section id="workloads"><h2>Workloads</h2>'
                    f"{table_html(_rows(plan.workloads), WORKLOAD_COLS)}</section>")
        if plan.tiers is not None and len(plan.tiers):
            body.append(f'<section id="tiers"><h2>Speed tiers</h2>{table_html(_rows(plan.tiers))}</section>')
        if simulation is not None:
            body.append(simulation_section(simulation))
        if plan.curtailment is not None and len(plan.curtailment):
            body.append(curtailment_html(plan))
        if frontier_points_by_model:
            parts = ['<section id="frontiers"><h2>Frontiers</h2><p class="muted">Output tokens/s per MW of rack '
                     "power (prefill included) against tokens/s per user, per hardware in the fleet; dashed lines are "
                     "the speed tiers, stars the plan's operating point for each workload (all the power it uses, "
                     "prefill included).</p>"]
            for model, entry in frontier_points_by_model.items():
                points, chosen = (entry.get("points", []), entry.get("chosen")) if isinstance(entry, dict) \
                    else (entry, None)
                parts.append(f'<h3 id="frontier-{_e(model)}">{_e(model)}</h3>')
                if isinstance(entry, dict) and entry.get("input_tokens"):
                    parts.append(f'<p class="muted">Drawn for {entry["input_tokens"]:,.0f} prompt and '
                                 f'{entry["output_tokens"]:,.0f} output tokens per request (the model\'s first '
                                 "workload), plain decoding.</p>")
                if any(c.get("draft_tokens") for c in chosen or []):
                    parts.append('<p class="muted">Operating points that use speculative decoding (draft tokens) '
                                 "can sit above the curve: the frontier is drawn for plain decoding.</p>")
                parts.append(_chart(charts.frontier_figure(points, f"frontier: {model}", chosen)))
            parts.append("</section>")
            body.append("".join(parts))
        cost_rows = charts.cost_breakdown(plan)
        if cost_rows:
            body.append('<section id="costs"><h2>Cost breakdown (USD per year)</h2>'
                        f"{_chart(charts.cost_figure(plan))}{table_html(cost_rows)}</section>")
        if plan.unserved:
            body.append('<section id="unserved"><h2>Unserved workloads</h2>'
                        + table_html([{"workload": k, "why": v} for k, v in plan.unserved.items()]) + "</section>")
        if plan.alternatives is not None and len(plan.alternatives):
            body.append(alternatives_html(plan.alternatives))
        if getattr(plan, "robust", None):
            body.append(robust_section(plan.robust))
        body.append('<section id="assumptions"><h2>Assumptions</h2><ul>'
                    + "".join(f"<li>{_e(x)}</li>" for x in d["assumptions"]) + "</ul></section>")
        body.append(f'<section id="provenance"><h2>Provenance</h2>'
                    f"{table_html([{'key': k, 'value': v} for k, v in (plan.provenance or {}).items()])}</section>")
    elif simulation is not None:
        body.append(simulation_section(simulation))
    subtitle = f"fleet plan, status: {status}"
    return _document(f"planner report: {name}", subtitle, body)


# ---- the simulation -------------------------------------------------------------------------------------------------
SIM_POOL_COLS = ["workload", "hardware", "role", "replicas", "servers", "utilization"]


def _verdict(holds: bool) -> str:
    return "holds" if holds else "fails"


def simulation_cards(sim: dict) -> str:
    """One line of cards: the verdict, the seed, the simulated window and the arrivals."""
    failures = sim.get("failures") or []
    verdict = ("every workload holds its targets" if sim["holds"] else
               f"{len(failures)} missed target{'s' if len(failures) != 1 else ''}")
    requests = sum(w["requests"] for w in sim["workloads"])
    cards = [
        _card("simulated at peak", _verdict(sim["holds"]), verdict, "" if sim["holds"] else "over"),
        _card("seed", str(sim["seed"]), "the same seed gives the same run"),
        _card("duration", f"{sim['duration_s']:,.4g} s",
              f"of arrivals; statistics after a {sim['warmup_s']:,.3g} s warm-up"),
        _card("arrivals", sim["trace"] or "Poisson",
              "a trace's shape scaled to each peak rate" if sim["trace"] else "at each workload's peak rate"),
        _card("requests", _num(float(requests)), "in the window, every workload"),
    ]
    return '<div class="cards">' + "".join(cards) + "</div>"


def _at(w: dict, label: str, key: str, shared: str | None) -> dict:
    """A figure at the workload's own percentile: named by it where every workload shares it, else beside it."""
    if shared is not None:
        return {f"{label} {shared}" + (" s" if key.endswith("_s") else ""): w[key]}
    return {f"{label} at percentile" + (" s" if key.endswith("_s") else ""): w[key]}


def simulation_workload_rows(sim: dict) -> list[dict]:
    """The workloads' table, each figure beside its target, headed as the terminal's table is."""
    percentiles = {f"p{w['ttft_percentile']:g}" for w in sim["workloads"]}
    shared = percentiles.pop() if len(percentiles) == 1 else None
    any_api = any(w.get("api_requests") for w in sim["workloads"])
    rows = []
    for w in sim["workloads"]:
        row = {"workload": w["workload"], "holds": "yes" if w["holds"] else "no", "requests": w["requests"],
               "unfinished": w["unfinished"]}
        if any_api:
            row["to a hosted API"] = w["api_requests"]
        if shared is None:
            row["percentile"] = f"p{w['ttft_percentile']:g}"
        row.update({"TTFT p50 s": w["ttft_p50_s"], "TTFT p90 s": w["ttft_p90_s"], "TTFT p99 s": w["ttft_p99_s"]})
        if shared not in ("p50", "p90", "p99"):
            row.update(_at(w, "TTFT", "ttft_at_target_percentile_s", shared))
        row.update({"target s": w["ttft_target_s"], "plan's TTFT s": w["analytic_ttft_s"],
                    "tok/s/user p50": w["tps_per_user_p50"]})
        if shared != "p50":
            row.update(_at(w, "tok/s/user", "tps_per_user_at_target_percentile", shared))
        row.update({"tier tok/s/user": w["min_tps_per_user"], "SLO met": w["slo_attainment"]})
        rows.append(row)
    return rows


def failures_html(failures: list[str]) -> str:
    if not failures:
        return ""
    return '<ul class="over">' + "".join(f"<li>{_e(f)}</li>" for f in failures) + "</ul>"


def simulation_workload_html(w: dict) -> str:
    """One workload: its verdict, its missed targets in words, and its latency chart."""
    name = w["workload"]
    verdict = _verdict(w["holds"])
    return (f'<h3 id="sim-{_e(name)}">{_e(name)}: <span class="{"" if w["holds"] else "over"}">{verdict}</span>'
            f"</h3>{failures_html(w.get('failures') or [])}"
            f"{_chart(charts.latency_figure(w, f'{name}: simulated at peak ({verdict})'))}")


def simulation_sections(sim: dict) -> str:
    """A simulated plan as sections: one (``simulation_section``), or a build-out's one per period and demand
    scenario (``BuildOutSimResult.to_dict()``)."""
    if "periods" not in sim:
        return simulation_section(sim)
    return "".join(simulation_section(
        {**run, "seed": sim["seed"], "tolerance": sim.get("tolerance")}, f"Simulated at peak: period "
        f"{run['start_date']}" + (f", demand scenario {run['demand_scenario']}" if run["demand_scenario"] else ""),
        f"simulation-{k}") for k, run in enumerate(sim["periods"]))


def simulation_section(sim: dict, heading: str = "Simulated at peak", anchor: str = "simulation") -> str:
    """A simulated plan (``SimResult.to_dict()``, INTERFACE.md 4.7) as a section: the verdict, seed, window and
    arrivals; each workload's latencies against its targets and the plan's closed-form TTFT; its distributions
    drawn; the missed targets in words; and each pool's utilization. It draws what it is given: nothing is run."""
    tolerance = sim.get("tolerance")
    tol = f" within {100 * tolerance:.3g}%" if tolerance else ""
    parts = [f'<section id="{_e(anchor)}"><h2>{_e(heading)}</h2>', simulation_cards(sim),
             '<p class="muted">Each workload\'s peak traffic replayed through the plan\'s own pools by discrete-event '
             "simulation (docs/MODEL.md 16). A workload holds when every request of the window finished, its TTFT at "
             f"its percentile is within its target and its tokens/s per user at that percentile is at least "
             f"its tier, each{_e(tol)}. The plan's TTFT is its own closed-form TTFT at that percentile (the slowest "
             "of its rows); SLO met is the share of requests that met both targets.</p>",
             table_html(simulation_workload_rows(sim))]
    if sim.get("failures"):
        parts.append(f"<h3>Missed targets</h3>{failures_html(sim['failures'])}")
    parts.extend(simulation_workload_html(w) for w in sim["workloads"])
    parts.append('<h3 id="sim-pools">Pools</h3><p class="muted">utilization: prefill pools, the busy share of their '
                 "servers' time; decode and colocated pools, the streams held over their slots (servers x batch), "
                 "over the window.</p>" + table_html(sim.get("pools") or [], SIM_POOL_COLS))
    parts.append("</section>")
    return "".join(parts)


def render_simulation_html(sim: dict, title: str | None = None) -> str:
    """A simulated plan as a page of its own (``planner simulate --html FILE``)."""
    name = title or sim.get("scenario") or "plan"
    if "periods" in sim:
        subtitle = f"simulated at peak, period by period: {_verdict(sim['holds'])}, seed {sim['seed']}"
    else:
        subtitle = (f"simulated at peak: {_verdict(sim['holds'])}, {sim['duration_s']:,.4g} s of "
                    f"{sim['trace'] or 'Poisson'} arrivals, seed {sim['seed']}")
    return _document(f"planner simulation: {name}", subtitle, [simulation_sections(sim)])


def curtailment_html(plan) -> str:
    """What the site can shed at its peak (OPTIMIZER.md 13): the chart and the table."""
    rows = _rows(plan.curtailment)
    order = plan.inputs["scenario"]["site"].get("curtailment_order", "tier") if plan.inputs else "tier"
    return ('<section id="curtailment"><h2>What the site can shed at its peak</h2><p class="muted">Step 0 keeps '
            "every workload at its tier: the pools run at the peak's share of the capacity they hold (1 / (1 + "
            "headroom)), packed onto as few racks as their chips need, the rest powered off. Each later step sheds "
            f"one more workload whole (by {_e(order)}: site.curtailment_order). Figures are cumulative; "
            "deferrable_hours_per_day is how long a day the shed traffic could wait for its pools' spare capacity "
            "later that day (0: it is lost while the step lasts, at forgone_revenue_usd_per_hour).</p>"
            + "".join(site_curtailment_html(rows, site) for site in dict.fromkeys(r.get("site") for r in rows))
            + "</section>")


def site_curtailment_html(rows: list[dict], site: str | None) -> str:
    """One site's steps (every row where the plan has one site): its chart and its table."""
    mine = [r for r in rows if r.get("site") == site]
    title = "facility MW the site can shed at its peak" if site is None else f"facility MW {site} can shed at its peak"
    return ("" if site is None else f"<h3>{_e(site)}</h3>") + _chart(charts.curtailment_figure(mine, title)) + \
        table_html(mine)


def alternatives_html(alternatives) -> str:
    """Per workload, its cheapest options (the used ones marked), not one list sorted across workloads."""
    key = "usd_per_year_per_1k_tokens_per_s"
    parts = ['<section id="alternatives"><h2>Alternatives per workload</h2><p class="muted">The cheapest option on '
             f"each system per workload and role, cheapest {ALTERNATIVE_ROWS_PER_WORKLOAD} per workload; used = in "
             "the plan.</p>"]
    for (workload,), group in alternatives.group_by(["workload"], maintain_order=True):
        rows = group.sort(key).head(ALTERNATIVE_ROWS_PER_WORKLOAD) if key in group.columns else group
        parts.append(f"<h3>{_e(workload)}</h3>{table_html(_rows(rows))}")
    return "".join(parts) + "</section>"


def render_frontier_html(points: list[dict], title: str, chosen: list[dict] | None = None) -> str:
    """The frontier chart alone as a self-contained page, with the frontier points and best-at-tier tables."""
    cols = ["hardware", "tier", "tps_per_user", "output_tokens_per_s_per_mw", "chips", "tensor_parallel",
            "pipeline_parallel", "expert_parallel", "batch", "precision", "bound"]
    body = [f'<section id="frontier"><h2>{_e(title)}</h2>{_chart(charts.frontier_figure(points, title, chosen))}'
            "</section>",
            '<section id="best-at-tiers"><h2>Best output tokens/s per MW at each tier</h2>'
            f"{table_html(best_at_tiers(points))}</section>",
            f'<section id="points"><h2>Frontier points</h2>{table_html(points, cols)}</section>']
    tiers = ", ".join(f"{k} ≥{v:g}" for k, v in TIERS.items())
    return _document(title, f"tier boundaries (tokens/s per user): {tiers}", body)


# ---- frontier data for a plan ---------------------------------------------------------------------------------------
def write_html(text: str, path) -> None:
    """Write ``text`` to ``path`` atomically (planner.report.files.atomic_write)."""
    atomic_write(path, text.encode("utf-8"))


def render_buildout_html(plan, title: str | None = None, simulation: dict | None = None) -> str:
    """A build-out as one self-contained page: the first order and the costs in words, then per demand scenario
    the installed racks per period (a stacked chart) and the periods' table, the simulated periods where given
    (``solve --verify``), then the assumptions."""
    d = plan.to_dict()
    name = title or plan.scenario
    lines = buildout_lines(d)
    body = [f'<section id="answer"><h2>The answer</h2><p class="lead">{_e(lines[1])}</p><ul>'
            + "".join(f"<li>{_e(x)}</li>" for x in lines[2:]) + "</ul></section>"]
    many = d.get("scenarios") or [{"name": "", "probability": 1.0, "periods": d["periods"]}]
    for s in many:
        label = f"demand scenario {s['name']} ({100 * s['probability']:.3g}%)" if s["name"] else "the build-out"
        body.append(f'<section class="buildout"><h2>{_e(label)}</h2>'
                    f"{_chart(charts.buildout_figure(s['periods'], 'installed racks per period, by system'))}"
                    f"{table_html(period_rows(s['periods']))}{_sites_by_period(s['periods'])}</section>")
    if simulation is not None:
        body.append(simulation_sections(simulation))
    body.append('<section id="assumptions"><h2>Assumptions</h2><ul>'
                + "".join(f"<li>{_e(x)}</li>" for x in d["assumptions"]) + "</ul></section>")
    body.append('<section id="checks"><h2>Checks</h2>' + table_html(d["checks"]) + "</section>")
    return _document(f"planner report: {name}", f"build-out, status: {plan.status}", body)


def _sites_by_period(periods: list[dict]) -> str:
    """A build-out over several sites (docs/OPTIMIZER.md 21): what stands where in each period, each site's racks
    and facility power against its limits then; nothing with one site."""
    rows = [{"start": p["start_date"], "site": e["name"], "racks": e["racks"], "max racks": e.get("max_racks"),
             "facility MW": e["facility_power_mw"], "budget MW": e.get("power_budget_mw"),
             "USD/year": e["annual_cost_usd"]} for p in periods for e in p["totals"].get("sites") or ()]
    return f"<h3>What stands where</h3>{table_html(rows)}" if rows else ""


# ---- the sweep report ---------------------------------------------------------------------------------------------
SWEEP_ROWS_SHOWN = 200


def robust_section(robust: dict) -> str:
    """The robust fleet beside the base plan: racks per system, and each plan's objective and regret over the
    samples (``planner.sweep.robust.robust_summary``)."""
    unit = robust["unit"]
    rows = [{"plan": name.replace("_", " "), **{f"{k}_{unit}": v for k, v in robust[name]["objective"].items()
                                                 if k != "samples"},
             **{f"regret_{k}_{unit}": v for k, v in robust[name]["regret"].items() if k != "samples"},
             "samples": robust[name]["regret"]["samples"]} for name in ("base_plan", "robust_plan")]
    return ('<section id="robust"><h2>The robust fleet</h2><ul>'
            + "".join(f"<li>{_e(x.strip())}</li>" for x in robust_lines(robust)[:1]) + "</ul>"
            + table_html(robust["fleet"]) + table_html(rows) + "</section>")


def render_sweep_html(table, robust: dict | None = None, title: str = "sweep") -> str:
    """A sweep as one self-contained page: the answer in words, the tornado (what moves the cost most), how often
    each system is in the plan, the base plan's regret beside the robust fleet's, and the variants' table."""
    import polars as pl

    lines = sweep_lines(table, robust)[:-1]
    body = [f'<section id="answer"><h2>The answer</h2><p class="lead">{_e(lines[0])}</p><ul>'
            + "".join(f"<li>{_e(x.strip())}</li>" for x in lines[1:]) + "</ul></section>"]
    tornado = sensitivity(table, axis_columns(table))
    body.append('<section id="tornado"><h2>What moves the cost most</h2>'
                + (_chart(charts.tornado_figure(tornado, "mean cost, lower half -> upper half of each axis",
                                                cost_label(table), cost_unit(table)))
                   + table_html(tornado) if tornado else
                   '<p class="muted">(no numeric axis splits the solved variants into two halves)</p>')
                + "</section>")
    shares = system_shares(table)
    body.append('<section id="systems"><h2>How often each system is in the plan</h2>'
                + (_chart(charts.share_figure(shares, "share of the solved variants whose plan buys it"
                                              + ("" if cost_unit(table) == "usd_per_year" else " in its first order")))
                   if shares else '<p class="muted">(no variant has a plan)</p>') + "</section>")
    unit = regret_unit(table)
    if unit is not None:
        label = "USD/year" if unit == "usd_per_year" else "W"
        series = {"base plan": table[f"base_plan_regret_{unit}"].to_list()}
        if f"robust_plan_regret_{unit}" in table.columns:
            series["robust plan"] = table[f"robust_plan_regret_{unit}"].to_list()
        has_any = any(v is not None for vs in series.values() for v in vs)
        body.append('<section id="regret"><h2>Regret: each plan against each variant\'s own optimum</h2>'
                    + (_chart(charts.regret_figure(series, "regret across the variants", label)) if has_any else
                       '<p class="muted">(the base plan has no regret here: it falls short where nothing may be '
                       'bought late)</p>')
                    + "</section>")
    if robust is not None:
        body.append(robust_section(robust))
    shown = table.head(SWEEP_ROWS_SHOWN)
    keep = ["variant", *axis_columns(table), "status", cost_column(table),
            *[c for c in table.columns if c.startswith(("racks.", "first_order.", "base_plan_", "robust_plan_"))],
            "error"]
    note = (f" (the first {SWEEP_ROWS_SHOWN} of {len(table):,}; every row is in sweep.parquet and sweep.csv)"
            if len(table) > SWEEP_ROWS_SHOWN else "")
    body.append(f'<section id="variants"><h2>The variants{_e(note)}</h2>'
                + table_html(shown.select([c for c in keep if c in shown.columns]).to_dicts()) + "</section>")
    solved = len(table.filter(pl.col(cost_column(table)).is_not_null()))
    return _document(f"planner sweep: {title}", f"{len(table):,} variants, {solved:,} solved", body)
