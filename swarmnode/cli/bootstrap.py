"""`swarmnode bootstrap`: what its flags change in the config, and the addresses it gives users.

A bootstrap node is an ordinary daemon in one role: configs/bootstrap.yaml (no model, a DHT
server on a fixed TCP port of every interface) copied into its own home on first start, with
the flags below applied over it. The home remembers the flags (<home>/bootstrap.json, which also
marks it a bootstrap node's): a later start without them runs as the first did, and a flag given
again replaces the saved one. No I/O here: cli/daemon_commands.py reads the home and prints.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from swarmnode.swarm.relaying.reachability import listening_ports

DEFAULT_BOOTSTRAP_HOME = Path("~/.swarmnode-bootstrap")
BOOTSTRAP_CONFIG = "bootstrap.yaml"  # in configs/, shipped as swarmnode.configs
BOOTSTRAP_PORT = 7100  # configs/bootstrap.yaml's host_maddrs; docs/operators.md tells operators to open it
# The flags a bootstrap home remembers (<home>/bootstrap.json), and the config value each sets;
# --port is applied to the loaded host_maddrs instead (it changes their port, not the addresses).
FLAG_KEYS = {"--swarm": "swarm.name", "--window-s": "swarm.window_s", "--initial-peer": "swarm.initial_peers",
             "--announce": "network.announce_maddrs", "--transport": "network.transport", "--status-port": "status.port"}
SAVED_FLAGS = ("--swarm", "--window-s", "--port", "--announce", "--initial-peer", "--transport", "--status-port")
LIST_FLAGS = ("--announce", "--initial-peer")
INT_FLAGS = {"--port": (1, 65535), "--status-port": (0, 65535)}


def given_flags(values: dict[str, Any]) -> dict[str, Any]:
    """The flags given on this command line (a repeatable flag given no times, or any flag left
    out, is not given)."""
    return {flag: value for flag, value in values.items() if value is not None and value != []}


def saved_flags_problem(saved: dict[str, Any], path: Path) -> str | None:
    """Why flags read from a bootstrap.json cannot be used as they are, or None (the config checks
    the values the flags set, as it checks flags given on the command line)."""
    for flag, value in saved.items():
        where = f"{path}: {flag} {value!r}"
        if flag not in SAVED_FLAGS:
            return f"{path}: unknown flag {flag!r} (known: {', '.join(SAVED_FLAGS)}); fix the file or delete it"
        if flag in LIST_FLAGS and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            return f"{where} is not a list of addresses; fix the file, or pass {flag} again"
        if flag in INT_FLAGS and not (isinstance(value, int) and not isinstance(value, bool)
                                      and INT_FLAGS[flag][0] <= value <= INT_FLAGS[flag][1]):
            return f"{where} is not a port ({INT_FLAGS[flag][0]}-{INT_FLAGS[flag][1]}); fix the file, or pass {flag} again"
        if flag == "--window-s" and not (isinstance(value, (int, float)) and not isinstance(value, bool)):
            return f"{where} is not a number of seconds; fix the file, or pass {flag} again"
        if flag in ("--swarm", "--transport") and not isinstance(value, str):
            return f"{where} is not a name; fix the file, or pass {flag} again"
    return None


def merged_flags(saved: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """The flags this start runs with: the saved ones, each replaced by the same flag given now."""
    merged = {**saved, **given}
    return {flag: merged[flag] for flag in SAVED_FLAGS if flag in merged}


def flag_sources(saved: dict[str, Any], given: dict[str, Any], path: Path) -> dict[str, str]:
    """config key -> how an error line names the flag that set it (a saved one says where it is
    kept; --port is named by saved_flag_name)."""
    return {key: saved_flag_name(flag, given, path) for flag, key in FLAG_KEYS.items() if flag in given or flag in saved}


def saved_flag_name(flag: str, given: dict[str, Any], path: Path) -> str:
    """`flag` as given, or as saved in the home's file (named short: the home is named beside it)."""
    return flag if flag in given else f"{flag} (saved in {path.name})"


def bootstrap_overrides(flags: dict[str, Any]) -> dict[str, Any]:
    """The config values the flags set (dotted keys, as load_config takes them); --port aside."""
    return {key: list(flags[flag]) if flag in LIST_FLAGS else flags[flag]
            for flag, key in FLAG_KEYS.items() if flag in flags}


def command_line(flags: dict[str, Any]) -> str:
    """The flags as they would be typed (a repeatable one once per value)."""
    words = []
    for flag, value in flags.items():
        for item in value if flag in LIST_FLAGS else [value]:
            words.append(f"{flag} {item:g}" if isinstance(item, float) else f"{flag} {item}")
    return " ".join(words) or "none (configs/bootstrap.yaml and the home's config.yaml only)"


def saved_flags_line(flags: dict[str, Any], saved: dict[str, Any] | None, path: Path) -> str:
    """What the operator is told of the flags the home remembers: kept, or saved anew."""
    if saved == flags:
        return f"flags saved in {path} (flags given replace them): {command_line(flags)}"
    return f"saved the flags in {path} for the next starts (flags given then replace them): {command_line(flags)}"


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
