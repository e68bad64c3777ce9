"""Simulator traces: the kraftcheck-trace/1 JSON Lines format (format.py, docs/trace-format.md)
and its export to ITF (itf.py)."""
