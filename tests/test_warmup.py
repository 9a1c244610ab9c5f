"""``planner warmup`` compiles and caches the kernels; a solve's time limit then bounds only the search."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.warmup import kernels_cached


def test_warmup_leaves_every_sentinel_kernel_cached_and_says_so():
    out = CliRunner().invoke(main, ["warmup"])
    assert out.exit_code == 0, out.output
    for step in ("bytecode", "solve", "simulate", "estimate", "frontier", "kernels ready"):
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
    monkeypatch.setattr(W, "load_scenario", lambda path: calls.append(("read", path)) or f"scenario of {path}")
    monkeypatch.setattr(W, "answer", lambda sc, *a, **k: calls.append(("solve", sc)) or SimpleNamespace(plan="plan"))
    assert planner.solve("s.yaml") == "plan"
    assert calls == [("read", "s.yaml"), "compile", ("solve", "scenario of s.yaml")]
    monkeypatch.setattr(W, "kernels_cached", lambda: True)
    calls.clear()
    planner.solve("s.yaml")
    assert calls == [("read", "s.yaml"), ("solve", "scenario of s.yaml")]
    assert (planner.InfeasibleError, planner.InputError, planner.PlannerError) == (
        InfeasibleError, InputError, PlannerError)


def test_a_bad_scenario_is_refused_before_any_compiling(monkeypatch):
    """planner.solve(None) with the kernels' cache missing: an InputError at once, not a minute of compiling
    first (the library's type checks ran after the warm-up)."""
    import planner
    from planner import warmup as W
    from planner.errors import InputError

    monkeypatch.setattr(W, "kernels_cached", lambda: False)
    monkeypatch.setattr(W, "warmup", lambda: (_ for _ in ()).throw(AssertionError("compiled first")))
    for bad in (None, 42, "no-such-file.yaml"):
        with pytest.raises(InputError):
            planner.solve(bad)


def test_warmup_writes_the_bytecode_even_where_python_is_told_not_to(monkeypatch):
    """A command compiles every module from source where no .pyc is stored (PYTHONDONTWRITEBYTECODE, this
    machine's setting): warmup writes them, so a command only reads them."""
    import importlib.util
    import sys
    from pathlib import Path

    import planner.cli
    import solvers.milp
    from planner.warmup import compile_bytecode

    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    for module in (planner.cli, solvers.milp):
        Path(importlib.util.cache_from_source(module.__file__)).unlink(missing_ok=True)
    assert compile_bytecode()
    for module in (planner.cli, solvers.milp):
        assert Path(importlib.util.cache_from_source(module.__file__)).is_file()


def test_the_cli_checks_every_input_before_compiling(monkeypatch, tmp_path):
    """`planner solve` with the cache missing and a bad flag: exit 2 at once, no compiling first."""
    from planner import kernel_cache
    from planner import warmup as W

    monkeypatch.setattr(kernel_cache, "kernels_cached", lambda: False)
    monkeypatch.setattr(W, "warmup", lambda **k: (_ for _ in ()).throw(AssertionError("compiled first")))
    scenario = str(Path(__file__).resolve().parents[1] / "scenarios" / "bank-2mw.yaml")
    for args in (["--no-whatif"], ["--trace", "azure-code-2023", "--no-verify"], ["--out", str(tmp_path / "f.txt" / "x")]):
        (tmp_path / "f.txt").write_text("a file")
        out = CliRunner().invoke(main, ["solve", scenario, *args])
        assert out.exit_code == 2, (args, out.output)
