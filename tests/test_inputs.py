"""Input files are refused before they are read when they cannot be a scenario or a plan (issue 11, item 5)."""

from __future__ import annotations

import os
import time

import pytest
from click.testing import CliRunner

from planner.cli import main


@pytest.mark.parametrize("command", ["validate", "check"])
def test_devices_pipes_huge_and_long_paths_exit_2_at_once(tmp_path, command):
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    sparse = tmp_path / "sparse.yaml"
    with open(sparse, "wb") as fh:
        fh.truncate(6 * 2**30)  # 6 GB of holes: nothing may read it
    for path, message in (("/dev/zero", "not a regular file"), (str(fifo), "not a regular file"),
                          (str(sparse), "larger than"), (str(tmp_path / ("a" * 300 + ".yaml")), "cannot be read"),
                          (str(tmp_path), "is a directory"), (str(tmp_path / "missing.yaml"), "no such file")):
        t0 = time.perf_counter()
        res = CliRunner().invoke(main, [command, path])
        assert res.exit_code == 2, (path, res.output)
        assert message in res.output and "Traceback" not in res.output, (path, res.output)
        assert time.perf_counter() - t0 < 5.0, path  # refused, not read
