"""`swarmnode bootstrap`: what its flags change in the config, and the addresses it gives users.

A bootstrap node is an ordinary daemon in one role: configs/bootstrap.yaml (no model, a DHT
server on a fixed TCP port of every interface) copied into its own home on first start, with
the flags below applied over it. No I/O here: cli/daemon_commands.py reads the home and prints.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from swarmnode.swarm.relaying.reachability import listening_ports

DEFAULT_BOOTSTRAP_HOME = Path("~/.swarmnode-bootstrap")
BOOTSTRAP_CONFIG = "bootstrap.yaml"  # in configs/, shipped as swarmnode.configs
BOOTSTRAP_PORT = 7100  # configs/bootstrap.yaml's host_maddrs; docs/operators.md tells operators to open it
BOOTSTRAP_FLAGS = {"swarm.initial_peers": "--initial-peer", "swarm.name": "--swarm",
                   "network.announce_maddrs": "--announce", "status.port": "--status-port",
                   "network.transport": "--transport"}


def bootstrap_overrides(announce: list[str], initial_peers: list[str], swarm: str | None,
                        status_port: int | None) -> dict[str, Any]:
    """The config values the flags set (dotted keys, as load_config takes them); --port is applied
    to the loaded host_maddrs instead (it changes their port, not the addresses)."""
    overrides: dict[str, Any] = {}
    if announce:
        overrides["network.announce_maddrs"] = list(announce)
    if initial_peers:
        overrides["swarm.initial_peers"] = list(initial_peers)
    if swarm is not None:
        overrides["swarm.name"] = swarm
    if status_port is not None:
        overrides["status.port"] = status_port
    return overrides


def announce_problem(announce: list[str]) -> str | None:
    """Why an --announce value cannot be announced as given, or None (the config checks the rest)."""
    for maddr in announce:
        if "/p2p/" in maddr:
            return (f"--announce {maddr}: give the address without /p2p/<peer id> "
                    "(the node adds its own id), e.g. /dns4/boot1.example.org/tcp/7100")
    return None


def user_address_lines(announce: list[str], host_maddrs: list[str], peer_id: str) -> list[str]:
    """What to print for the operator: the full addresses users join through, or, without
    --announce, the form they take."""
    if announce:
        return ["give users these addresses (swarmnode run --initial-peer ADDR, or swarm.initial_peers):",
                *(f"  {maddr.rstrip('/')}/p2p/{peer_id}" for maddr in announce)]
    port = next(iter(listening_ports(host_maddrs)), BOOTSTRAP_PORT)
    return ["no --announce given: users join through this host's public name or address with this node's id,",
            f"  /dns4/<this host's DNS name>/tcp/{port}/p2p/{peer_id}",
            f"  /ip4/<this host's public IP>/tcp/{port}/p2p/{peer_id}",
            f"(pass --announce /dns4/<name>/tcp/{port} to announce it and print it here)"]
