"""Tests written for mutmut's survivors in seqviz/analysis/explain/ (issue 28, scripts/mutation
seqviz/analysis/explain/)."""
