"""The simulated latencies in the HTML report (issue 24 item 6b): ``planner simulate``'s result drawn beside the
targets, as a page of its own and as a section of the plan's report, self-contained, drawing only what it is given."""

from __future__ import annotations

import copy
import html
import json

import pytest

pytest.importorskip("matplotlib")

from planner import load_scenario, solve  # noqa: E402
from planner.report import charts  # noqa: E402
from planner.report import html as html_report  # noqa: E402
from planner.sim import simulate  # noqa: E402
from tests.test_html import (CHROMIUM, PNG_SIGNATURE, ROOT, _chromium, _no_external_references,  # noqa: E402
                             _page_errors)

DURATION_S = 30.0


@pytest.fixture(scope="module")
def plan():
    return solve(load_scenario(ROOT / "scenarios" / "bank-2mw.yaml"))


@pytest.fixture(scope="module")
def plan_dict(plan):
    return json.loads(json.dumps(plan.to_dict()))


@pytest.fixture(scope="module")
def sim(plan_dict):
    return simulate(plan_dict, duration_s=DURATION_S).to_dict()


@pytest.fixture(scope="module")
def failing_sim(plan_dict):
    """The plan with one decode row's replicas halved: that workload's streams queue for slots and miss its tier."""
    short = copy.deepcopy(plan_dict)
    row = next(r for r in short["allocation"] if r["role"] == "decode")
    row["replicas"] = float(row["replicas"]) / 2
    result = simulate(short, duration_s=DURATION_S).to_dict()
    assert not result["holds"] and any(f.startswith(row["workload"] + ":") for f in result["failures"])
    return {"sim": result, "workload": row["workload"]}


@pytest.fixture(scope="module")
def page(sim):
    return html_report.render_simulation_html(sim)


def _section(text: str) -> str:
    start = text.index('<section id="simulation">')
    return text[start:text.index("</section>", start)]


def _assert_shows_the_simulation(text: str, sim: dict) -> None:
    section = _section(text)
    assert "<h2>Simulated at peak</h2>" in section
    for label in ("seed", "duration", "arrivals", "Poisson"):
        assert label in section, label
    q = f"p{sim['workloads'][0]['ttft_percentile']:g}"  # bank-2mw sets every TTFT target at one percentile
    for column in ("requests", "TTFT p50 s", "TTFT p90 s", "TTFT p99 s", "target s", "plan's TTFT s",
                   "tok/s/user p50", f"tok/s/user {q}", "tier tok/s/user", "SLO met", "utilization"):
        assert f">{html.escape(column)}</th>" in section, column
    for w in sim["workloads"]:
        assert f'id="sim-{w["workload"]}"' in section, w["workload"]
        # the figures beside their targets, as the table prints them
        for key in ("requests", "ttft_p90_s", "ttft_target_s", "analytic_ttft_s", "tps_per_user_at_target_percentile",
                    "min_tps_per_user", "slo_attainment"):
            assert f">{html_report._cell(w[key])}</td>" in section, (w["workload"], key)
    # a chart per workload, the pools' rows
    assert section.count("<svg") == len(sim["workloads"])
    assert section.count("<tr>") >= 1 + len(sim["workloads"]) + 1 + len(sim["pools"])
    _no_external_references(text)


def test_the_simulation_page_shows_every_workload_against_its_targets(page, sim):
    assert page.startswith("<!DOCTYPE html>")
    assert "planner simulation: bank-2mw" in page
    _assert_shows_the_simulation(page, sim)
    verdict = "holds" if sim["holds"] else "fails"
    assert f'<div class="value {"" if sim["holds"] else "over"}">{verdict}</div>' in page


def test_the_plan_report_carries_the_simulation_it_is_given(plan, sim):
    bare = html_report.render_plan_html(plan)
    text = html_report.render_plan_html(plan, simulation=sim)
    assert 'id="simulation"' not in bare
    assert text.index('id="workloads"') < text.index('id="simulation"') < text.index('id="assumptions"')
    _assert_shows_the_simulation(text, sim)
    assert text.count("<svg") == bare.count("<svg") + len(sim["workloads"])


def test_rendering_runs_no_simulation(plan, sim, monkeypatch):
    """The report draws the result it is handed: a simulation run while rendering would fail here."""
    import planner.sim
    import planner.sim.run

    def refuse(*args, **kwargs):
        raise AssertionError("the report ran a simulation")

    monkeypatch.setattr(planner.sim, "simulate", refuse)
    monkeypatch.setattr(planner.sim.run, "simulate", refuse)
    assert 'id="simulation"' in html_report.render_simulation_html(sim)
    assert 'id="simulation"' in html_report.render_plan_html(plan, simulation=sim)


def test_a_failing_workload_shows_its_failure_in_words(failing_sim):
    sim, name = failing_sim["sim"], failing_sim["workload"]
    text = html_report.render_simulation_html(sim, title="short of decode")
    section = _section(text)
    assert "planner simulation: short of decode" in text
    assert '<div class="value over">fails</div>' in section
    for failure in sim["failures"]:
        assert html.escape(failure) in section, failure
    assert f'id="sim-{name}">{name}: <span class="over">fails</span>' in section
    own = next(w for w in sim["workloads"] if w["workload"] == name)
    for failure in own["failures"]:
        assert section.count(html.escape(failure)) >= 1
    _no_external_references(text)


def test_workloads_at_different_percentiles_say_which(sim):
    """Where the workloads' targets sit at different percentiles, each row names its own; a hosted API's share of
    the requests gets a column only where some workload sends any."""
    mixed = copy.deepcopy(sim)
    mixed["workloads"][0].update(ttft_percentile=99.0, api_requests=7)
    rows = html_report.simulation_workload_rows(mixed)
    assert [r["percentile"] for r in rows] == ["p99"] + ["p90"] * (len(rows) - 1)
    assert rows[0]["TTFT at percentile s"] == mixed["workloads"][0]["ttft_at_target_percentile_s"]
    assert rows[0]["to a hosted API"] == 7 and rows[1]["to a hosted API"] == 0
    assert {len(r) for r in rows} == {len(rows[0])}
    assert "to a hosted API" not in html_report.simulation_workload_rows(sim)[0]


def test_the_report_is_deterministic(sim):
    assert html_report.render_simulation_html(sim) == html_report.render_simulation_html(sim)


def test_the_latency_figure_marks_the_targets(sim, tmp_path):
    w = sim["workloads"][0]
    fig = charts.latency_figure(w, "latency")
    left, right = fig.axes
    assert "(s" in left.get_ylabel() and "tokens/s per user" in right.get_ylabel()
    labels = [t.get_text() for ax in fig.axes for t in ax.get_legend().get_texts()]
    assert any(f"target {w['ttft_target_s']:g} s at p{w['ttft_percentile']:g}" in x for x in labels)
    assert any(x.startswith("plan's TTFT") for x in labels)
    assert any(f"tier ≥{w['min_tps_per_user']:g} tok/s" in x for x in labels)
    charts.save_png(fig, tmp_path / "latency.png")
    assert (tmp_path / "latency.png").read_bytes().startswith(PNG_SIGNATURE)


def test_a_workload_with_no_finished_request_still_draws():
    w = {"workload": "idle", "ttft_percentile": 99.0, "ttft_target_s": 0.5, "analytic_ttft_s": None,
         "min_tps_per_user": 200.0, "ttft_distribution_s": [], "tpot_distribution_s": [],
         "ttft_at_target_percentile_s": None, "tps_per_user_at_target_percentile": None}
    fig = charts.latency_figure(w, "idle")
    assert "no request finished" in [t.get_text() for t in fig.axes[0].texts]
    charts._close(fig)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (CI installs Debian's chromium in .ci/run)")
def test_the_simulation_page_renders_in_headless_chromium(tmp_path, failing_sim):
    page = tmp_path / "simulation.html"
    html_report.write_html(html_report.render_simulation_html(failing_sim["sim"]), page)
    shot = tmp_path / "shot.png"
    run = _chromium([f"--screenshot={shot}", "--window-size=1400,2400", "--hide-scrollbars", page.as_uri()],
                    tmp_path / "profile-shot")
    assert run.returncode == 0, run.stderr[-2000:]
    assert shot.read_bytes().startswith(PNG_SIGNATURE) and shot.stat().st_size > 20_000
    assert not _page_errors(run.stderr), _page_errors(run.stderr)
