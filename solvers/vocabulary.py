"""The optimizer's words, with no imports so that the CLI can build its choices from them instantly
(``planner.vocabulary`` re-exports them beside the planner's own)."""

OBJECTIVES: tuple[str, ...] = ("min_cost", "min_power", "max_revenue", "max_served", "min_carbon")
SOLVERS: tuple[str, ...] = ("scip", "highs", "cp-sat")
# What a plan's status can be: optimal; feasible (stopped at the gap); infeasible; time_limit (a plan, stopped by
# the time limit). ``no_plan`` (the limit came first, nothing found) never reaches a plan: ``solve`` raises.
STATUSES: tuple[str, ...] = ("optimal", "feasible", "infeasible", "time_limit")
NO_PLAN = "no_plan"
HAS_PLAN: tuple[str, ...] = ("optimal", "feasible", "time_limit")
