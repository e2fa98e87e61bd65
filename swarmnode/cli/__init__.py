"""The typer command-line interface (no logic the daemon needs).

- app.py: make_app (the `swarmnode` command for a node of given protocol versions), `version`, `init`, and main
- daemon_commands.py: `run` and `bootstrap`, the commands that start a daemon
- status_commands.py: `status` (and --watch), `peers`, `logs`: what reads a running node or its log
- reset_training.py: `reset-training`, moving a home's training aside to train another model in it
- local.py: `swarm local` (swarm_app): N daemons on 127.0.0.1 with a live table
- bench.py: `bench async` (bench_app): synchronous against asynchronous training speed
- options.py: the options and choices several commands share (HomeOption, Transport, RARE)
- start.py: what `run` and `bootstrap` share (config with value sources, checks before start, the run); `fail`
- bootstrap.py: `swarmnode bootstrap`'s flags as config values, saved and given flags merged, and the addresses it gives users
- bootstrap_view.py: what status shows of a bootstrap node (records, relay load) and every node's swarm parameters
- headline.py: the one-screen `swarmnode status` and the frames of `status --watch`
- status_text.py: the sentences both status views show (network, peers, problems)
- render.py: rich tables and lines for status documents (peers_table, status_view (--full), swarm_table)
- lines.py: a multiaddr as a rich line that is never wrapped or cut (address_line), for headline and render
- format.py: status values written for people (ages, sizes, counts, histograms)
- logfile.py: `swarmnode logs`: the log's last lines, and following it across rotation
- help.py: help pages with plain placeholders and paragraphs that wrap at the terminal's width
"""
