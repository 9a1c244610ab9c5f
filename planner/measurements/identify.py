"""Which efficiency parameters a user's measured rows identify (docs/MODEL.md 12.3), and how well.

The rows' residuals are log errors ``r_i = ln(predicted_i / measured_i)``, one per measured figure. Their Jacobian
``J[i, j] = dr_i / d ln(theta_j)`` at the shipped prior (central differences of ``PROBE_LOG_STEP``) says how each
parameter moves the rows; each column is scaled by the prior's own log uncertainty ``sigma_j`` (half the log width
of its range in data/uncertainty.yaml), so a column is the rows' response to one prior standard deviation.

A parameter is identified when, after removing what the parameters already chosen explain (Gram-Schmidt with the
largest remaining column first: pivoted QR), its column still carries ``MIN_INFORMATION`` times the prior's
information at the rows' noise ``MEASUREMENT_LOG_ERROR``: ``|a_perp|^2 / noise^2 >= MIN_INFORMATION``. A column of
zeros (a collective on one chip) or one collinear with a chosen column (a kernel's fixed time and the step's on one
model: both a fixed cost per step) is not. Never more parameters than rows: a row is one run, and its figures (the
per-user speed and the replica's tokens/s) are one observation of that run's step time.
"""

from __future__ import annotations

import math

import numpy as np

# A serving benchmark's run-to-run spread at a steady load: 1-3% on throughput and per-user speed, taken as 2%.
MEASUREMENT_LOG_ERROR = 0.02
# Identified: the rows at least halve the prior's standard deviation (posterior variance 1 / (1 + I) <= 1/4).
MIN_INFORMATION = 3.0
# The Jacobian's probe, +-5% of a parameter: past the finite-difference noise, inside the model's smooth pieces.
PROBE_LOG_STEP = 0.05


def log_jacobian(residuals, eff: dict, names: list[str], bounds: dict) -> np.ndarray:
    """``J[i, j]``: d ``residuals(eff)[i]`` / d ln ``eff[names[j]]``, central differences clipped to the bounds."""
    columns = []
    for n in names:
        lo, hi = bounds[n]
        up, down = min(eff[n] * math.exp(PROBE_LOG_STEP), hi), max(eff[n] * math.exp(-PROBE_LOG_STEP), lo)
        span = math.log(up / down)
        columns.append((residuals({**eff, n: up}) - residuals({**eff, n: down})) / span if span > 0 else
                       np.zeros(len(residuals(eff))))
    return np.array(columns).T.reshape(-1, len(names))


def identified(jacobian: np.ndarray, names: list[str], sigma_log: dict, rows: int) -> tuple[list[str], dict]:
    """(the names the rows identify, in the order chosen; for each name not chosen, why): pivoted Gram-Schmidt on
    the prior-scaled columns, stopping below ``MIN_INFORMATION`` or at ``rows`` parameters."""
    scaled = jacobian * np.array([sigma_log[n] for n in names])
    remaining = scaled.copy()
    chosen: list[int] = []
    while len(chosen) < min(rows, len(names)):
        norms = np.linalg.norm(remaining, axis=0)
        norms[chosen] = -1.0
        j = int(np.argmax(norms))
        if norms[j] ** 2 < MIN_INFORMATION * MEASUREMENT_LOG_ERROR ** 2:
            break
        chosen.append(j)
        q = remaining[:, j] / norms[j]
        remaining = remaining - np.outer(q, q @ remaining)
    why = {names[j]: _why_held(scaled, j, chosen, names, rows) for j in range(len(names)) if j not in chosen}
    return [names[j] for j in chosen], why


def _why_held(scaled: np.ndarray, j: int, chosen: list[int], names: list[str], rows: int) -> str:
    """Why column ``j`` was not chosen: the rows do not move with it, or it moves them as a chosen one does, or the
    rows ran out."""
    own = float(np.linalg.norm(scaled[:, j]))
    hint = f"; to fit it: {WHAT_IDENTIFIES.get(names[j], 'more varied rows')}"
    if own < 1e-9:
        return "the rows do not depend on it" + hint
    if own ** 2 < MIN_INFORMATION * MEASUREMENT_LOG_ERROR ** 2:
        return f"the rows hardly move with it (one prior standard deviation: {100 * own:.2g}% in all)" + hint
    if len(chosen) >= rows:
        return f"{rows} row{'s' if rows != 1 else ''} fit at most {rows} parameter{'s' if rows != 1 else ''}" + hint
    cosines = [abs(float(scaled[:, k] @ scaled[:, j])) / (own * float(np.linalg.norm(scaled[:, k]))) for k in chosen]
    k = int(np.argmax(cosines))
    return f"it moves the rows as {names[chosen[k]]} does (|cos| {cosines[k]:.3f}){hint}"


# The rows that set each parameter apart from the others (the model's forms, MODEL.md 2): what a held one needs.
WHAT_IDENTIFIES = {
    "bandwidth_efficiency": "decode rows at several concurrencies (the weights' and KV's reads)",
    "flops_efficiency": "prefill rows, or long prompts at high concurrency (compute-bound passes)",
    "kernel_latency_s": "two models of different depth at low concurrency (a cost per layer, not per step)",
    "step_overhead_s": "two models of different depth at low concurrency (a cost per step, not per layer)",
    "collective_latency_s": "rows on 2 or more chips (tensor parallel: an all-reduce a layer)",
}


def posterior_sigma_log(jacobian: np.ndarray, sigma_log: list[float], noise: float) -> np.ndarray:
    """Each fitted parameter's log standard deviation after the rows (Laplace: the data's information
    ``J^T J / noise^2`` plus the prior's ``1 / sigma^2``); never above the prior's."""
    if jacobian.shape[1] == 0:
        return np.zeros(0)
    s = np.array(sigma_log)
    scaled = jacobian * s
    information = scaled.T @ scaled / noise ** 2 + np.eye(len(s))
    return s * np.sqrt(np.diag(np.linalg.inv(information)))
