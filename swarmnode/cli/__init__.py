"""The typer command-line interface (no logic the daemon needs).

- app.py: the `swarmnode` command (init, run, bootstrap, status, peers, logs, swarm local, bench async) and main
- start.py: what `run` and `bootstrap` share (config with value sources, checks before start, the run); `fail`
- bootstrap.py: `swarmnode bootstrap`'s flags as config values, and the addresses it gives users
- headline.py: the one-screen `swarmnode status` and the frames of `status --watch`
- render.py: rich tables and lines for status documents (peers_table, status_view (--full), swarm_table)
- format.py: status values written for people (ages, sizes, counts, histograms)
- logfile.py: `swarmnode logs`: the log's last lines, and following it across rotation
- help.py: help pages with plain placeholders and paragraphs that wrap at the terminal's width
"""
