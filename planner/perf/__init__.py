"""The performance model's planner side: catalog entries packed into vectors (``pack``), the one search space
(``grid``), one deployment (``estimate``), the Pareto frontier (``frontier``) and the fit of the efficiency
parameters to published figures (``calibration``). The formulas themselves are the jitted kernels in
``solvers.perf``; nothing here computes a figure on its own.
"""
