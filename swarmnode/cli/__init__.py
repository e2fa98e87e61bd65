"""The typer command-line interface."""
