"""Sweeps: many variants of one scenario, solved on a process pool or on Ray (docs/INTERFACE.md 2.9)."""
