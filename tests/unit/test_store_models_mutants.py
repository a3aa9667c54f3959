"""Tests written for mutmut's survivors in seqviz/store/models.py (issue 28, scripts/mutation seqviz/store/models.py)."""
