"""Whether others can dial this node, from peers' dial-back answers, and which of its addresses
to give out (pure).

A node asks a few peers to open a TCP connection back to the address they see it at, on its
listening ports (node/network.py does the asking; swarm/relaying/routed_transport.py the answering).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from swarmnode.protocol.generated.peer_record_pb2 import (
    REACHABILITY_PRIVATE,
    REACHABILITY_PUBLIC,
    REACHABILITY_UNKNOWN,
)

NAMES = {REACHABILITY_UNKNOWN: "unknown", REACHABILITY_PUBLIC: "public", REACHABILITY_PRIVATE: "private"}
BY_NAME = {name: value for value, name in NAMES.items()}


@dataclass(frozen=True)
class DialBackAnswer:
    responder: str
    observed_ip: str
    open_ports: tuple[int, ...]


@dataclass(frozen=True)
class Verdict:
    reachability: int
    observed_ip: str  # "" when no peer said
    open_port: int | None  # a listening port a peer reached, when public


def decide(answers: list[DialBackAnswer]) -> Verdict:
    """PUBLIC when more than half of the answering peers reached this node on some port,
    PRIVATE when the others did not, UNKNOWN with no answers. One lying peer among three
    cannot flip the verdict; a node with a single peer takes its word (the worst a liar
    does is make this node use relays when it need not, or wait for dials that fail).
    The observed IP is the one most answers name; the port, the one most of them reached."""
    if not answers:
        return Verdict(REACHABILITY_UNKNOWN, "", None)
    reached = [a for a in answers if a.open_ports]
    ips = Counter(a.observed_ip for a in answers if a.observed_ip)
    observed_ip = ips.most_common(1)[0][0] if ips else ""
    if 2 * len(reached) <= len(answers):
        return Verdict(REACHABILITY_PRIVATE, observed_ip, None)
    ports = Counter(p for a in reached for p in a.open_ports)
    return Verdict(REACHABILITY_PUBLIC, observed_ip, ports.most_common(1)[0][0])


def _ip_and_port(maddr: str) -> tuple[str, str, int] | None:
    """('ip4'|'ip6', address, tcp port) of a plain /ipX/.../tcp/... multiaddr, else None."""
    parts = maddr.split("/")
    if len(parts) < 5 or parts[1] not in ("ip4", "ip6") or parts[3] != "tcp":
        return None
    try:
        return parts[1], parts[2], int(parts[4])
    except ValueError:
        return None


def listening_ports(listen_maddrs: list[str]) -> list[int]:
    """The TCP ports p2pd listens on (from its own multiaddrs), each once."""
    found = (_ip_and_port(m) for m in listen_maddrs)
    return list(dict.fromkeys(p[2] for p in found if p is not None and p[2] > 0))


def _is_loopback(maddr: str) -> bool:
    parsed = _ip_and_port(maddr)
    return parsed is not None and (parsed[1].startswith("127.") or parsed[1] == "::1")


def usable_multiaddrs(listen_maddrs: list[str], verdict: Verdict, announce_maddrs: list[str],
                      peer_id: str) -> list[str]:
    """The full multiaddrs (with /p2p/<peer_id>) others can join this node through:
    - the announced addresses (an operator's public name or port forward), always;
    - public: the address peers reached it at (observed IP, reached port);
    - unknown (no peer answered yet): its listening addresses, loopback ones only when it
      listens on nothing else (a swarm on one machine);
    - private: nothing more (peers reach it through its relays; it cannot be joined through)."""
    suffix = f"/p2p/{peer_id}"
    found = [m if m.endswith(suffix) else m + suffix for m in announce_maddrs]
    if verdict.reachability == REACHABILITY_PUBLIC and verdict.observed_ip and verdict.open_port:
        family = "ip6" if ":" in verdict.observed_ip else "ip4"
        found.append(f"/{family}/{verdict.observed_ip}/tcp/{verdict.open_port}{suffix}")
    elif verdict.reachability == REACHABILITY_UNKNOWN:
        plain = [m if m.endswith(suffix) else m + suffix for m in listen_maddrs if _ip_and_port(m)]
        outside = [m for m in plain if not _is_loopback(m)]
        found += outside or plain
    return list(dict.fromkeys(found))
