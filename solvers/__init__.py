"""Array-in, array-out numerical kernels: the performance model (Numba) and, later, the fleet optimizer.

Only numpy arrays and scalars cross into jitted code. The public wrappers in ``planner.performance`` validate
inputs and pack catalog objects into the float64 vectors whose layouts live in ``solvers.perf.slots``.
"""
