"""``planner warmup`` compiles and caches the kernels; a solve's time limit then bounds only the search."""

from __future__ import annotations

from click.testing import CliRunner

from planner.cli import main
from planner.warmup import kernels_cached


def test_warmup_leaves_every_sentinel_kernel_cached_and_says_so():
    out = CliRunner().invoke(main, ["warmup"])
    assert out.exit_code == 0, out.output
    for step in ("solve", "simulate", "estimate", "frontier", "kernels ready"):
        assert step in out.output
    assert kernels_cached()


def test_the_library_solve_compiles_before_its_time_limit_starts(monkeypatch):
    """issue 25 item 1 in the library: planner.solve compiles where the cache is missing, then solves (so the
    scenario's limit never pays for the compilation); with the cache there it only solves. The errors it raises
    are the package's own names."""
    import planner
    from planner import warmup as W
    from planner.errors import InfeasibleError, InputError, PlannerError

    calls = []
    monkeypatch.setattr(W, "kernels_cached", lambda: False)
    monkeypatch.setattr(W, "warmup", lambda: calls.append("compile"))
    monkeypatch.setattr(W, "solve", lambda sc, *a, **k: calls.append(("solve", sc)) or "plan")
    assert planner.solve("s.yaml") == "plan" and calls == ["compile", ("solve", "s.yaml")]
    monkeypatch.setattr(W, "kernels_cached", lambda: True)
    calls.clear()
    planner.solve("s.yaml")
    assert calls == [("solve", "s.yaml")]
    assert (planner.InfeasibleError, planner.InputError, planner.PlannerError) == (
        InfeasibleError, InputError, PlannerError)
