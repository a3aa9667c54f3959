"""Measured speed and memory of seqviz; written to benchmarks/report.md. Nothing here asserts a time."""
