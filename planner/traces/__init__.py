"""Public LLM-inference traces shipped with planner (planner/data/traces/traces.yaml: sources and licences), a reader
for them and for a user's own, and the workload fitted to a trace (rate, peak, lengths, prefix-cache hit)."""

from planner.traces.fit import (LengthFit, TraceFit, fit_lines, fit_summary, fit_trace, fit_yaml, lognormal_params)
from planner.traces.read import FORMATS, MAX_TRACE_BYTES, Trace, read_trace, shipped_traces
from planner.traces.replay import sample_arrivals

__all__ = ["FORMATS", "MAX_TRACE_BYTES", "LengthFit", "Trace", "TraceFit", "fit_lines", "fit_summary", "fit_trace",
           "fit_yaml", "lognormal_params", "read_trace", "sample_arrivals", "shipped_traces"]
