"""What `swarmnode status` shows of a bootstrap node's work, in place of training (no I/O: these
only build text and rich tables from a status document whose `role` is "bootstrap").

A bootstrap node trains nothing: what it does is hold the swarm's peer records, answer the DHT,
relay for nodes behind NAT, and refuse what does not belong to its swarm.
"""
from __future__ import annotations

from typing import Any

from rich.table import Table

from swarmnode.cli.format import counts


def is_bootstrap(s: dict[str, Any]) -> bool:
    return s.get("role") == "bootstrap"


def swarm_parameters_text(s: dict[str, Any]) -> str:
    """What every node of the swarm must share, as this node runs it: name, window, protocol."""
    versions = s.get("protocol_versions") or [s.get("protocol_version", "?")] * 2
    protocol = f"{versions[0]}" if versions[0] == versions[-1] else f"{versions[0]}-{versions[-1]}"
    return f"{s.get('swarm', '?')}, swarm.window_s {s.get('window_s', 0):g} s, protocol {protocol}"


def records_text(s: dict[str, Any], routing: bool = False) -> str:
    """The peer records it holds and has taken in (`routing`: and its DHT routing table)."""
    accepted = (s.get("messages") or {}).get("accepted") or {}
    text = f"{len(s.get('peers') or [])} held, {accepted.get('peer_record', 0)} accepted since start"
    return text + (f"; routing table {s.get('routing_table_size', 0)}" if routing else "")


def relay_text(s: dict[str, Any]) -> str:
    """What relaying for nodes behind NAT costs it now, against its bounds."""
    net = s.get("network") or {}
    load = net.get("relay_load") or {}
    if not net.get("relaying"):
        why = "peers have not dialled it back yet" if net.get("reachability") != "private" else "behind NAT"
        return f"not relaying ({why})"
    refused = f", {load['refused_full']} refused (full)" if load.get("refused_full") else ""
    return (f"{load.get('reservations', 0)}/{load.get('capacity', 0)} reservations, "
            f"{load.get('forwards_in_flight', 0)}/{load.get('max_forwards', 0)} forwards in flight, "
            f"{load.get('forwards_last_minute', 0)} last minute{refused}")


def rejects_text(s: dict[str, Any]) -> str:
    rejected = (s.get("messages") or {}).get("rejected") or {}
    return f"{sum(rejected.values())} ({counts(rejected)})" if rejected else "none"


def bootstrap_grid(s: dict[str, Any]) -> Table:
    """The full view's section of a bootstrap node: what it serves, in place of training."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    grid.add_row("swarm", swarm_parameters_text(s))
    grid.add_row("peer records", records_text(s, routing=True))
    grid.add_row("relay", relay_text(s))
    grid.add_row("rejected", rejects_text(s))
    return grid
