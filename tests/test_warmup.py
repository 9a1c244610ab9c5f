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
