"""`swarmnode status`, `peers` and `logs`: the commands that read a node's status or its log."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.live import Live

from swarmnode.cli.options import HomeOption
from swarmnode.cli.render import peers_table
from swarmnode.cli.start import FAILED, fail
from swarmnode.home import NodeHome, resolve_home, start_command



def _fetch_or_exit(home: Optional[Path], url: Optional[str], path: str) -> dict[str, Any]:
    from swarmnode.status.client import NoDaemon, fetch, status_url_for_home

    try:
        base = url or status_url_for_home(NodeHome(resolve_home(home)))
        return fetch(base, path)
    except NoDaemon as e:
        fail(str(e), FAILED)


def status(
    home: Optional[Path] = HomeOption,
    url: Optional[str] = typer.Option(None, "--url", metavar="URL", help="status endpoint, e.g. http://127.0.0.1:8765"),
    full: bool = typer.Option(False, "--full", help="everything: training, gossip, summaries, storage, peers"),
    addrs: bool = typer.Option(False, "--addrs", help="only this node's multiaddrs, one a line (for scripts)"),
    as_json: bool = typer.Option(False, "--json", help="the status document (docs/status.md)"),
    watch: bool = typer.Option(False, "--watch", help="live view that fits the terminal (Ctrl-C quits)"),
) -> None:
    """Show a running daemon's status on one screen (--full: all)."""
    from swarmnode.cli.headline import headline_view
    from swarmnode.cli.render import status_view

    if as_json:
        typer.echo(json.dumps(_fetch_or_exit(home, url, "/status"), indent=2))
        return
    if addrs:
        doc = _fetch_or_exit(home, url, "/status")
        if not doc.get("multiaddrs"):
            if (doc.get("network") or {}).get("reachability") == "private":
                fail("peers cannot dial this node (behind NAT or a firewall): it has no address to join through; "
                     "forward its TCP port and set network.announce_maddrs, or give out another node's address", FAILED)
            fail(f"the daemon has no multiaddrs yet (state {doc.get('state')}); try again in a few seconds", FAILED)
        for maddr in doc["multiaddrs"]:
            typer.echo(maddr)
        return
    console = Console()
    if watch:
        _watch(console, home, url, full)
        return
    doc = _fetch_or_exit(home, url, "/status")
    # crop=False: an address longer than the terminal is left to the terminal's own wrap, copyable whole
    console.print(status_view(doc) if full else headline_view(doc, width=console.width), crop=False)


def _watch(console: Console, home: Optional[Path], url: Optional[str], full: bool) -> None:
    """Redraw the status every second in place, sized to the terminal; while the daemon does not
    answer, say so on screen and keep asking (Ctrl-C quits)."""
    from swarmnode.cli.headline import WatchState, watch_frame
    from swarmnode.status.client import NoDaemon, fetch, status_url_for_home

    state = WatchState()
    state.answered(_fetch_or_exit(home, url, "/status"))  # no daemon at all: one line, exit 1
    try:
        with Live(console=console, auto_refresh=False, vertical_overflow="crop") as live:
            while True:
                height, width = console.size.height - 1, console.width  # the last row holds the cursor
                live.update(watch_frame(state, height, width, full), refresh=True)
                time.sleep(1.0)
                try:
                    state.answered(fetch(url or status_url_for_home(NodeHome(resolve_home(home))), "/status", timeout=2.0))
                except NoDaemon as e:
                    state.failed(str(e), time.time())
    except KeyboardInterrupt:
        pass


def peers(
    home: Optional[Path] = HomeOption,
    url: Optional[str] = typer.Option(None, "--url", metavar="URL", help="status endpoint"),
    as_json: bool = typer.Option(False, "--json", help="print the peer list as JSON"),
) -> None:
    """List the daemon's peer table."""
    doc = _fetch_or_exit(home, url, "/peers")
    if as_json:
        typer.echo(json.dumps(doc, indent=2))
    elif not doc["peers"]:
        typer.echo("no peers yet: the node has not learnt of any (`swarmnode status` says how its join goes)")
    else:
        Console().print(peers_table(doc["peers"]))


def logs(
    home: Optional[Path] = HomeOption,
    follow: bool = typer.Option(False, "-f", "--follow", help="print new lines as they come, across rotation (Ctrl-C quits)"),
    lines: int = typer.Option(20, "-n", "--lines", min=0, metavar="N", help="how many of the last lines to print"),
) -> None:
    """Show the node's log, <home>/logs/node.log (-f follows it)."""
    from swarmnode.cli.logfile import follow as follow_log
    from swarmnode.cli.logfile import last_lines

    node_home = NodeHome(resolve_home(home))
    path = node_home.node_log
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        fail(f"no log at {path}: no node has run with home {node_home.root} yet "
             f"(start one with: {start_command(node_home)})", FAILED)
    except OSError as e:
        fail(f"cannot read the log {path}: {e.strerror or e}", FAILED)
    with f:
        sys.stdout.write(last_lines(f, lines).decode("utf-8", errors="replace"))
        sys.stdout.flush()
        if follow:
            try:
                follow_log(f, path, lambda text: (sys.stdout.write(text), sys.stdout.flush()))
            except KeyboardInterrupt:
                pass
