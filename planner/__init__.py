"""planner: a fleet planner for AI inference hardware.

Heavy dependencies (numba, polars, ortools) are imported lazily so that ``planner --help`` stays instant.
"""

__version__ = "0.1.0"

__all__ = ["__version__", "load_scenario", "estimate", "frontier", "solve", "evaluate"]


def __getattr__(name):
    if name == "load_scenario":
        from planner.scenario import load_scenario

        return load_scenario
    if name in ("solve", "evaluate"):
        from planner import fleet

        return getattr(fleet, name)
    if name in ("estimate", "frontier"):
        from planner import performance

        return getattr(performance, name)
    raise AttributeError(name)
