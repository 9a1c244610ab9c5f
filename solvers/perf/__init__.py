"""The performance oracle: one set of jitted functions that every figure comes from (docs/MODEL.md).

``slots`` (vector layouts), ``kernels`` (decode and prefill breakdowns and their building blocks), ``serving``
(speculative tokens, replica power, colocated time share, TTFT queue, residency, KV transfer), ``split``
(attention/FFN disaggregation), ``sweep`` (parallel drivers over many configurations: the candidate engine, the
frontier's points), ``twin`` (the plain-Python twin of every kernel, for tests).
"""
