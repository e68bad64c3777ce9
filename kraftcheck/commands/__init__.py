"""Subcommands of the kraftcheck CLI; each module exposes register(app)."""
