"""The fleet: from a scenario's demands to the racks to buy and how to run them (docs/OPTIMIZER.md).

``demand`` (what each workload asks), ``options`` (the kinds of deployment, each with its engine generator and its
re-scorer), ``finance`` (rack costs, revenue), ``problem`` (the MILP's arrays), ``plan`` (the solution as tables
and JSON), ``check`` (a plan re-checked from disk), ``diagnose`` (why no fleet exists) and ``solve`` (all of it).
The MILP itself is ``solvers.milp``; the objectives are ``solvers.objectives``.
"""
