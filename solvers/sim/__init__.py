"""The discrete-event simulator of a plan's pools (docs/MODEL.md 16): ``engine`` (jitted, event-driven with
jumps over steps whose batch does not change), ``twin`` (plain Python, one event per step, a central FIFO queue per
prefill pool), ``rng`` (a counter-based generator both share, so they draw the same requests), ``heap`` (binary
heaps on flat arrays). Arrays and scalars in, arrays out; it never imports ``planner``."""
