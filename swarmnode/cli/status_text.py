"""The sentences `swarmnode status` shows in both views (the headline and --full): how the
node is reached, its peers, and its problems (no I/O: status documents in, text out)."""
from __future__ import annotations

import time
from collections import Counter
from typing import Any

from swarmnode.cli.format import counts


def network_text(s: dict[str, Any]) -> str:
    """Whether peers can dial this node, and how it is reached when they cannot (and the
    transport, when it is not the default)."""
    net = s.get("network") or {}
    via = "libp2p: " if net.get("transport") == "libp2p" else ""
    return via + _reachability_text(net)


def _reachability_text(net: dict[str, Any]) -> str:
    reach = net.get("reachability", "unknown")
    seen = f" at {net['observed_ip']}" if net.get("observed_ip") else ""
    if reach == "public":
        relaying = len(net.get("relayed_for") or [])
        return f"public{seen}" + (f"; relaying for {relaying}" if relaying else "")
    if reach == "private":
        relays = len(net.get("relays") or [])
        via = f"reached through {relays} relay{'s' if relays != 1 else ''}" if relays else "no relay yet"
        return f"behind NAT (seen{seen or ' nowhere'}): {via}; no address to give out"
    return "not checked yet (peers dial it back once it has peers)"


def peers_text(s: dict[str, Any]) -> str:
    peers = s.get("peers") or []
    if not peers:
        return f"none yet (routing table {s.get('routing_table_size', 0)})"
    states = counts(Counter(p.get("state", "?") for p in peers))
    base = (s.get("summaries") or {}).get("base_fingerprint")
    same = sum(1 for p in peers if base and p.get("base_fingerprint") == base)
    # Another base: rollouts are shared (re-scored), gradient summaries are not (a node without a model says no base)
    other = sum(1 for p in peers if base and p.get("base_fingerprint") not in ("", None, base))
    same_text = (f", {same} same base" + (f", {other} other base" if other else "")) if base else ""
    return f"{len(peers)} ({states}{same_text}); routing table {s.get('routing_table_size', 0)}"


# Steps in a row without a group whose rewards differ (no gradient) before status calls it a
# problem: a learning node has a few such steps now and then, never this many.
FLAT_STEPS_PROBLEM = 50


def problems(s: dict[str, Any]) -> list[str]:
    """What needs the operator's eye, one short sentence each (an empty list: nothing)."""
    found = []
    t, join = s.get("training") or {}, s.get("join") or {}
    if t.get("error") or str(t.get("phase") or "").startswith("failed"):
        found.append(f"training {t.get('phase')}" if t.get("phase", "").startswith("failed") else f"training: {t['error']}")
    if join.get("initial_peers") and not join.get("joined"):
        found.append(f"not joined: {join.get('last_error') or 'no answer yet'}")
    elif join.get("joined") and not s.get("peers") and (s.get("uptime_s") or 0) > 120:
        found.append("joined, but no peer has been seen")
    if (t.get("steps_without_spread_in_a_row") or 0) >= FLAT_STEPS_PROBLEM:
        found.append(f"the last {t['steps_without_spread_in_a_row']} steps learned nothing: every group's rewards "
                     "were equal (all wrong or all right); is the task within the model's reach? (training.tasks)")
    storage = s.get("storage") or {}
    if storage.get("checkpoint_failures"):
        found.append(f"{storage['checkpoint_failures']} checkpoint writes failed: {storage.get('last_checkpoint_error')}")
    rollouts = s.get("rollouts") or {}
    if rollouts.get("store_errors"):
        found.append(f"{rollouts['store_errors']} store writes failed (disk full?)")
    if rollouts.get("peers_ignored"):
        found.append(f"{rollouts['peers_ignored']} times a peer was ignored for bad rollouts")
    failing = failing_peers(s)
    if failing:
        found.append(f"requests to {failing} peer{'s' if failing != 1 else ''} failed in the last 5 min "
                     "(swarmnode status --json: network.failed_requests)")
    rejected = (s.get("messages") or {}).get("rejected") or {}
    foreign = sum(rejected.get(reason, 0) for reason in ("wrong_swarm", "unknown_key", "unsupported_version"))
    if foreign:
        found.append(f"{foreign} messages of another swarm, window or protocol version rejected")
    found += incompatible_problems(s.get("incompatible_peers") or [])
    found += other_window_problems(s.get("other_window_peers") or [], s.get("window_s") or 0.0)
    return found


def incompatible_problems(peers: list[dict[str, Any]]) -> list[str]:
    """Peers of protocol versions this node does not speak, by the side that should upgrade."""
    newer = sum(1 for p in peers if p.get("upgrade") == "this node")
    older = sum(1 for p in peers if p.get("upgrade") == "peer")
    found = []
    if newer:
        found.append(f"{newer} {'peer speaks' if newer == 1 else 'peers speak'} newer protocol versions: "
                     "upgrade swarmnode on this node")
    if older:
        found.append(f"{older} {'peer runs' if older == 1 else 'peers run'} an older swarmnode (skipped until upgraded)")
    return found


def other_window_problems(peers: list[dict[str, Any]], window_s: float) -> list[str]:
    """Peers of this swarm met publishing under another swarm.window_s (neither side sees the other)."""
    if not peers:
        return []
    theirs = ", ".join(sorted({f"{p.get('window_s', 0):g} s" for p in peers}))
    many = len(peers) != 1
    return [f"{len(peers)} peer{'s' if many else ''} {'run' if many else 'runs'} another swarm.window_s ({theirs}; "
            f"this node {window_s:g} s): every node of a swarm must share it (swarmnode status --json: other_window_peers)"]


def failing_peers(s: dict[str, Any], within_s: float = 300.0) -> int:
    """Known peers whose requests failed lately (a peer that left is no problem)."""
    net = s.get("network") or {}
    known = {p.get("peer_id") for p in s.get("peers") or []}
    now = s.get("dht_time") or time.time()
    return sum(1 for peer, f in (net.get("failed_requests") or {}).items()
               if peer in known and now - f.get("last_at", 0) < within_s)
