"""trace_checker package."""
