"""Token length distributions of a workload's prompts and outputs (docs/MODEL.md 15).

A scenario's ``input_tokens`` or ``output_tokens`` is one of three shapes:

* a number: every request has that many tokens (fixed; scv 0). Public traces spread far more (the Azure 2023
  traces' prompts scv 0.4-0.5, Mooncake's 2; ``planner trace fit``): give the spread where it is known;
* ``{mean: M, p99: P}``: lognormal with mean M and 99th percentile P. With ln X ~ N(mu, sigma^2), the mean is
  exp(mu + sigma^2 / 2) and the p99 exp(mu + sigma z99), z99 = 2.3263..., so ln(P / M) = sigma z99 - sigma^2 / 2.
  Its roots are sigma = z99 -+ sqrt(z99^2 - 2 ln(P / M)); the planner takes the smaller, 0 < sigma <= z99 (the one on
  which the p99 grows with the spread). It exists exactly when M < P <= M exp(z99^2 / 2) (about 14.97 M); any other
  pair is an input error. scv = exp(sigma^2) - 1;
* ``{table: [[tokens, weight], ...]}``: an empirical distribution, each token count with its weight (weights need
  not sum to 1; they are normalized).

The planner prices the mean (every rate and cost uses it); the TTFT queue is sized by the variance: the squared
coefficient of variation ``scv`` = variance / mean^2 of the prompt lengths is the prefill service time's (service
time is linear in prompt tokens to first order).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from planner.errors import InputError

MAX_TOKENS = 1e8  # the most tokens a length, a mean or a table entry may have
MAX_TABLE_ROWS = 100_000
Z99 = NormalDist().inv_cdf(0.99)  # 2.3263478740408408
MAX_P99_OVER_MEAN = math.exp(Z99 * Z99 / 2.0)  # 14.97...: the largest p99 / mean a lognormal has
FIXED, LOGNORMAL, TABLE = "fixed", "lognormal", "table"
SHAPES = ("a number of tokens (> 0, at most 1e8)", "{mean: M, p99: P} (lognormal, M < P <= 14.97 M)",
          "{table: [[tokens, weight], ...]} (empirical)")


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


@dataclass(frozen=True)
class Lengths:
    """A distribution of token counts. ``mean`` and ``scv`` (variance / mean^2) include ``shift`` (tokens added to
    every draw: an agentic call's growth over its first prompt, or reasoning tokens after the visible output);
    ``spec`` is the JSON-safe mapping it was read from, None when fixed."""

    kind: str
    mean: float
    scv: float
    spec: dict | None = None
    mu: float = 0.0  # lognormal: mean and standard deviation of ln(tokens), before the shift
    sigma: float = 0.0
    tokens: tuple = ()  # table: the token counts, ascending, and their probabilities
    weights: tuple = ()
    shift: float = 0.0

    # ---- construction -----------------------------------------------------------------------------------------
    @classmethod
    def fixed(cls, tokens: float) -> Lengths:
        return cls(FIXED, float(tokens), 0.0)

    @classmethod
    def lognormal(cls, mean: float, p99: float, field: str = "tokens") -> Lengths:
        """The lognormal with this mean and 99th percentile (module docstring); InputError when none exists."""
        if not p99 > mean:
            raise InputError(f"p99 ({p99:g}) must exceed the mean ({mean:g}): a lognormal's p99 lies above its mean",
                             field=field)
        if p99 > mean * MAX_P99_OVER_MEAN:
            raise InputError(f"p99 ({p99:g}) is more than {MAX_P99_OVER_MEAN:.4g} times the mean ({mean:g}): no "
                             f"lognormal has that mean and p99 (ln(p99 / mean) must be at most z99^2 / 2); give a "
                             f"table instead", field=field)
        log_ratio = math.log(p99 / mean)
        sigma = Z99 - math.sqrt(max(Z99 * Z99 - 2.0 * log_ratio, 0.0))
        spec = {"mean": float(mean), "p99": float(p99)}
        return cls(LOGNORMAL, float(mean), math.expm1(sigma * sigma), spec, math.log(mean) - sigma * sigma / 2.0,
                   sigma)

    @classmethod
    def table(cls, rows, field: str = "tokens") -> Lengths:
        """An empirical distribution from [[tokens, weight], ...]; InputError for anything else."""
        shape = "[[tokens, weight], ...] with tokens in (0, 1e8] and weights >= 0 summing above 0"
        if not isinstance(rows, (list, tuple)) or not rows or len(rows) > MAX_TABLE_ROWS:
            raise InputError(f"table: expected {shape} (1 to {MAX_TABLE_ROWS:,} rows), got {_short(rows)}",
                             field=field)
        for i, row in enumerate(rows):
            if not (isinstance(row, (list, tuple)) and len(row) == 2 and all(_number(x) for x in row)
                    and 0 < row[0] <= MAX_TOKENS and row[1] >= 0):
                raise InputError(f"table[{i}]: expected [tokens, weight] with tokens in (0, 1e8] and weight >= 0, "
                                 f"got {_short(row)}", field=field)
        t = np.array([float(r[0]) for r in rows])
        w = np.array([float(r[1]) for r in rows])
        if not w.sum() > 0:
            raise InputError(f"table: the weights sum to 0; expected {shape}", field=field)
        order = np.argsort(t, kind="stable")
        t, p = t[order], w[order] / w.sum()
        mean = float(p @ t)
        var = float(p @ (t - mean) ** 2)
        spec = {"table": [[float(a), float(b)] for a, b in rows]}
        return cls(TABLE, mean, var / (mean * mean), spec, tokens=tuple(t.tolist()), weights=tuple(p.tolist()))

    @classmethod
    def from_spec(cls, value, field: str) -> Lengths:
        """A number, {mean, p99} or {table} (module docstring) as a distribution; InputError naming ``field`` and
        the shapes expected for anything else."""
        if _number(value):
            if not 0 < value <= MAX_TOKENS:
                raise InputError(f"expected a number of tokens in (0, 1e8], got {_short(value)}", field=field)
            return cls.fixed(float(value))
        expected = f"expected {' or '.join(SHAPES)}"
        if not isinstance(value, dict):
            raise InputError(f"{expected}, got {_short(value)}", field=field)
        keys = set(value)
        if keys == {"table"}:
            return cls.table(value["table"], field)
        if keys == {"mean", "p99"}:
            mean, p99 = value["mean"], value["p99"]
            for name, x in (("mean", mean), ("p99", p99)):
                if not (_number(x) and 0 < x <= (MAX_TOKENS if name == "mean" else MAX_TOKENS * MAX_P99_OVER_MEAN)):
                    raise InputError(f"{name}: expected a number of tokens in (0, 1e8], got {_short(x)}", field=field)
            return cls.lognormal(float(mean), float(p99), field)
        raise InputError(f"{expected}; got a mapping with keys {sorted(map(str, keys))}", field=field)

    def shifted(self, tokens: float) -> Lengths:
        """Every draw plus ``tokens`` (the mean moves, the variance stays, so the scv changes)."""
        if tokens == 0.0:
            return self
        mean = self.mean + tokens
        var = self.scv * self.mean * self.mean
        return Lengths(self.kind, mean, var / (mean * mean) if mean > 0 else 0.0, self.spec, self.mu, self.sigma,
                       self.tokens, self.weights, self.shift + tokens)

    # ---- use --------------------------------------------------------------------------------------------------
    def quantile(self, q: float) -> float:
        """The ``q``-quantile (0 < q < 1) of the token count: the lognormal's exp(mu + sigma z_q), a table's
        smallest count whose cumulative weight reaches q, the fixed count."""
        if not 0.0 < q < 1.0:
            raise ValueError(f"quantile q must lie in (0, 1), got {q!r}")
        if self.kind == LOGNORMAL:
            return math.exp(self.mu + self.sigma * NormalDist().inv_cdf(q)) + self.shift
        if self.kind == TABLE:
            cum = np.cumsum(self.weights)
            i = int(np.searchsorted(cum, q * (1.0 - 1e-12), side="left"))
            return self.tokens[min(i, len(self.tokens) - 1)] + self.shift
        return self.mean

    def cdf(self, x: float) -> float:
        """The share of draws at or below ``x`` tokens."""
        if self.kind == LOGNORMAL:
            y = x - self.shift
            return NormalDist().cdf((math.log(y) - self.mu) / self.sigma) if y > 0 else 0.0
        if self.kind == TABLE:
            return float(np.sum(np.asarray(self.weights)[np.asarray(self.tokens) + self.shift <= x]))
        return 1.0 if x >= self.mean else 0.0

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` token counts drawn with ``rng`` (float64, at least 1 each: a draw below one token is one)."""
        if self.kind == LOGNORMAL:
            x = rng.lognormal(self.mu, self.sigma, int(n)) + self.shift
        elif self.kind == TABLE:
            x = rng.choice(np.asarray(self.tokens), size=int(n), p=np.asarray(self.weights)) + self.shift
        else:
            x = np.full(int(n), self.mean)
        return np.maximum(np.asarray(x, dtype=np.float64), 1.0)


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class MeanTokens(float):
    """A scenario's token count as the float its mean is (what every rate and cost uses), remembering the spec of
    the distribution it is the mean of (``spec``: None when fixed)."""

    spec: dict | None

    def __new__(cls, mean: float, spec: dict | None = None):
        obj = super().__new__(cls, mean)
        obj.spec = spec
        return obj

    def lengths(self, field: str = "tokens") -> Lengths:
        return Lengths.from_spec(self.spec if self.spec is not None else float(self), field)


def lengths_of(value, field: str = "tokens") -> Lengths:
    """The distribution behind a scenario's token count: a MeanTokens' spec, or a plain number fixed."""
    spec = getattr(value, "spec", None)
    return Lengths.from_spec(spec if spec is not None else float(value), field)


def mean_tokens(value, field: str = "tokens") -> MeanTokens:
    """A scenario's ``input_tokens``/``output_tokens`` (any shape of ``Lengths.from_spec``) as its mean."""
    if isinstance(value, MeanTokens):
        return value
    lengths = Lengths.from_spec(value, field)
    return MeanTokens(lengths.mean, lengths.spec)


def spec_or_number(value):
    """What a scenario file holds for a MeanTokens: its spec, or the number."""
    spec = getattr(value, "spec", None)
    return spec if spec is not None else float(value)


JSON_SCHEMA = {"anyOf": [
    {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_TOKENS},
    {"type": "object", "properties": {"mean": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_TOKENS},
                                      "p99": {"type": "number", "exclusiveMinimum": 0}},
     "required": ["mean", "p99"], "additionalProperties": False},
    {"type": "object", "properties": {"table": {"type": "array", "minItems": 1, "items": {
        "type": "array", "minItems": 2, "maxItems": 2, "items": {"type": "number", "minimum": 0}}}},
     "required": ["table"], "additionalProperties": False},
]}
