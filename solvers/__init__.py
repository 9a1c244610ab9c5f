"""The numerical layer: arrays in, arrays out; it never imports ``planner``.

``solvers.perf``: the jitted performance model (slots, kernels, serving formulas, attention/FFN split, sweep
drivers, and the plain-Python twin). ``solvers.milp``: the fleet MILP (OR-Tools MathOpt) with ``evaluate``;
``solvers.bruteforce``: the same optimum by enumeration on tiny problems; ``solvers.objectives``: the objectives'
registry. Only numpy arrays and scalars cross into jitted code; ``planner.perf.pack`` packs catalog objects into
the float64 vectors whose slots are ``solvers.perf.slots``.
"""
