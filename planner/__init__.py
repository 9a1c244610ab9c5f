"""planner: a fleet planner for AI inference hardware.

The library's calls: ``load_scenario``, ``estimate``, ``frontier``, ``solve`` (which compiles the kernels first
where their cache is missing, so no time limit pays for it, and simulates the plan as ``planner solve`` does),
``answer`` (the plan with its verification, what-ifs and frontiers), ``check`` (and ``evaluate``, its older name),
``simulate`` (a written plan replayed by discrete-event simulation), ``model_from_config`` (a catalog model from
a Hugging Face config.json); the
errors they raise: ``InputError`` (bad input), ``InfeasibleError`` (no fleet serves the scenario; its ``plan``
says why), ``PlannerError`` (their base). Heavy dependencies (numba, polars, ortools) are imported on first use so that ``planner --help``
stays instant.
"""

__version__ = "0.1.0"

_EXPORTS = {
    "load_scenario": ("planner.scenario", "load_scenario"),
    "estimate": ("planner.perf.estimate", "estimate"),
    "frontier": ("planner.perf.frontier", "frontier"),
    "solve": ("planner.warmup", "compiled_solve"),  # compiles the kernels first where their cache is missing
    "answer": ("planner.orchestration", "answer"),  # the plan and what goes with it (verification, what-ifs, frontiers)
    "check": ("planner.fleet.check", "check"),
    "simulate": ("planner.sim", "simulate"),  # a written plan replayed (interface 2.8.1; issue 43: it was missing)
    "model_from_config": ("planner.hf_config", "model_from_config"),  # a catalog Model from a config.json (2.4.1)
    "evaluate": ("planner.fleet.check", "check"),
    "InfeasibleError": ("planner.errors", "InfeasibleError"),
    "InputError": ("planner.errors", "InputError"),
    "PlannerError": ("planner.errors", "PlannerError"),
}
__all__ = ["__version__", *_EXPORTS]


def __getattr__(name):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'planner' has no attribute {name!r}")
    import importlib

    module, attr = _EXPORTS[name]
    return getattr(importlib.import_module(module), attr)


def __dir__():
    return sorted(__all__)
