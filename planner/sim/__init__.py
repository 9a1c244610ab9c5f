"""Plans checked by simulation (docs/MODEL.md 16): ``build`` turns a plan's pools into the simulator's arrays, ``run``
simulates them and reports against the workloads' targets."""

from planner.sim.run import BuildOutSimResult, SimResult, simulate

__all__ = ["BuildOutSimResult", "SimResult", "simulate"]
