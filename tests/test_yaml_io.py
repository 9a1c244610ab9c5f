"""One YAML reader for the whole project (issue 26 item 4): planner/yaml_io.py. Every other module reads YAML
through it, so every file gets the same guards (size, depth, duplicate keys, line-accurate errors)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
READS = re.compile(r"\byaml\.(safe_load|load|load_all|safe_load_all|compose|full_load|unsafe_load)\(")


def test_only_yaml_io_reads_yaml():
    found = [f"{p.relative_to(ROOT)}:{n}" for package in ("planner", "solvers") for p in (ROOT / package).rglob("*.py")
             if p.name != "yaml_io.py"
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if READS.search(line)]
    assert not found, f"YAML read outside planner/yaml_io.py: {found}"
