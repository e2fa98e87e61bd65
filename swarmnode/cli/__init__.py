"""The typer command-line interface (no logic the daemon needs).

- app.py: the `swarmnode` command (init, run, status, peers, swarm local, bench async) and main
- render.py: rich tables and lines for status documents (peers_table, status_view, swarm_table)
"""
