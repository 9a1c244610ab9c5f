"""The layers, written down and held (docs/ARCHITECTURE.md "Layers"; issue 26): every import between the
project's units points down the ranks below, wherever it sits in a module. The imports that still point up are
listed in ``UPWARD`` with why they stand; the test fails on a new one and on a listed one that is gone (so the list
only shrinks). Function-level imports of the project's own modules (the way an upward import hides a cycle) are
held at or below ``INNER_IMPORTS_AT_MOST`` outside the CLI edge."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Lower ranks first: a unit imports only units of a strictly lower rank. ``solvers`` is below all and imports
# nothing of planner/.
RANKS = {
    "solvers": 0,
    "planner.errors": 1, "planner.vocabulary": 1, "planner.interrupts": 1, "planner.__version__": 1,
    "planner.inputs": 2, "planner.lengths": 2, "planner.kernel_cache": 2, "planner.client": 2, "planner.writing": 2, "planner.yaml_io": 2,
    "planner.catalog": 3,
    "planner.hf_config": 3.5,  # catalog entries from Hugging Face configs: on the catalog, below what plans with them
    "planner.perf": 4, "planner.traces": 4,
    "planner.measurements": 5,
    "planner.scenario": 6,
    "planner.fleet": 7,
    "planner.sim": 8, "planner.sweep": 8, "planner.export": 8,
    "planner.orchestration": 9,
    "planner.report": 10,
    "planner.warmup": 11, "planner.server": 11, "planner": 11,
    "planner.cli": 12,
    "planner.launcher": 13,
}

# (importing module, imported unit): why it still points up. Remove an entry when its import is gone.
UPWARD = {
    ("planner.catalog", "planner.perf"): "Model.kv_bytes_per_token is the kernel's own figure, on perf.pack's vector",
    ("planner.measurements.curves", "planner.fleet"): "check re-reads a measured row as a fleet.options.Rescore",
    ("planner.scenario", "planner.fleet"): "validate's summary builds each workload's demand (fleet.problem)",
    ("planner.sweep.report", "planner.report"): "a sweep's table uses report's labels, CSV guard and JSON",
}

# Imports of planner/ or solvers/ inside functions, outside the CLI edge (planner/cli.py, where they keep `planner
# --help` instant, and planner/launcher.py, which imports the CLI only for a command no server took): a ratchet, lowered as they move to the top of their modules. Those left (2026-12): cycles
# (whatif <-> solve, solve and check -> buildout, options <-> curves, uncertainty -> calibration, robust -> run,
# catalog -> perf.pack), the kernels (numba) kept off planner.scenario's import path (perf.estimate, perf.frontier,
# curves, catalog; scenario.summary -> fleet.problem), report.files kept light (the CLI imports it after every
# command), and measurements/table.py's and perf/calibration.py's own.
INNER_IMPORTS_AT_MOST = 31


def unit_of(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "solvers":
        return "solvers"
    return "planner." + parts[1] if len(parts) >= 2 else "planner"


def module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_imports(path: Path):
    """(imported module, line, at module level) of every import of planner/ or solvers/ in one file. An import
    under a module-level ``if TYPE_CHECKING:`` (a name for the types alone, which runs nothing) is at module level;
    its layers are held like any other's."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(node) for node in tree.body}
    top |= {id(node) for block in tree.body if isinstance(block, ast.If) and isinstance(block.test, ast.Name)
            and block.test.id == "TYPE_CHECKING" for node in block.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = ([f"planner.{a.name}" for a in node.names] if node.module == "planner" else [node.module])
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            if name.split(".")[0] in ("planner", "solvers"):
                yield name, node.lineno, id(node) in top


def sources() -> list[Path]:
    return sorted(p for package in ("planner", "solvers") for p in (ROOT / package).rglob("*.py"))


def upward_imports() -> dict[tuple[str, str], list[str]]:
    found: dict[tuple[str, str], list[str]] = {}
    for path in sources():
        module = module_of(path)
        here = unit_of(module)
        for name, line, _ in project_imports(path):
            there = unit_of(name)
            if there == here or (there == "planner.__version__" and here != "solvers"):
                continue
            if RANKS[there] >= RANKS[here]:
                key = next(((m, u) for m, u in UPWARD if u == there and module.startswith(m)), (module, there))
                found.setdefault(key, []).append(f"{path.relative_to(ROOT)}:{line}")
    return found


def test_every_unit_has_a_rank():
    units = {unit_of(module_of(p)) for p in sources()}
    assert units <= set(RANKS), f"units without a rank in RANKS: {sorted(units - set(RANKS))}"


def test_solvers_never_import_planner():
    bad = [f"{p.relative_to(ROOT)}:{line}" for p in (ROOT / "solvers").rglob("*.py")
           for name, line, _ in project_imports(p) if name.startswith("planner")]
    assert not bad, f"solvers/ imports planner/: {bad}"


def test_imports_point_down_the_layers():
    found = upward_imports()
    new = {k: v for k, v in found.items() if k not in UPWARD}
    assert not new, "imports pointing up the layers (docs/ARCHITECTURE.md): " + "; ".join(
        f"{m} -> {u} at {', '.join(v)}" for (m, u), v in new.items())


def test_the_list_of_upward_imports_only_shrinks():
    gone = set(UPWARD) - set(upward_imports())
    assert not gone, f"no longer imported upward, remove from UPWARD: {sorted(gone)}"


def test_imports_inside_functions_do_not_grow():
    inner = [f"{p.relative_to(ROOT)}:{line}" for p in sources() if p.name not in ("cli.py", "launcher.py")
             for _, line, at_top in project_imports(p) if not at_top]
    assert len(inner) <= INNER_IMPORTS_AT_MOST, (
        f"{len(inner)} imports of planner/ or solvers/ inside functions (at most {INNER_IMPORTS_AT_MOST}): move new "
        "ones to the top of the module, or, if a cycle forces it, fix the layering")
