"""Peers joining and leaving the peer table, peers of another base, peers of protocol
versions this node does not speak and peers of another swarm.window_s, each told in the log once.

The daemon's poll loop hands `PeerLog.update` the table after every read of peers' records: a
peer new to the table joined; one gone from it left (its record expired, or the full table
dropped it). A peer that started from other base weights than this node stays in the table and
shares rollouts (the receiver re-scores them), but gradient summaries are exchanged only among
peers of one base: that is said once per peer. A peer whose protocol versions do not overlap
this node's never enters the table: the log says once which side should upgrade (an initial
peer's line is the daemon's join check's, in the same words). Nor does a peer of another
window: its records sit under keys this node does not use, refused as unknown keys, whose
window the record itself says. A flood of fresh identities costs
a bounded number of lines per poll: the first MAX_NAMED are named, the rest counted in one line.
"""
from __future__ import annotations

import logging
from typing import Iterable

from swarmnode.protocol import RecordOrigin
from swarmnode.protocol.versions import THIS_RELEASE, VersionRange, common_version, describe_incompatible
from swarmnode.status.snapshot import state_name
from swarmnode.utils.lru_map import LRUMap
from swarmnode.swarm.peers import IncompatiblePeer, PeerEntry, peer_id_of, short_id

log = logging.getLogger("swarmnode.peers")
MAX_NAMED = 5  # peers named one a line per poll and direction; the rest in one line


def _count(n: int) -> str:
    return f"{n} peer{'s' if n != 1 else ''}"


def _state(entry: PeerEntry) -> str:
    try:
        return state_name(entry.record.state)
    except ValueError:  # a state this version does not know
        return f"state {entry.record.state}"


def joined_lines(joined: list[PeerEntry], total: int) -> list[str]:
    lines = [f"peer {short_id(e.peer_id)} joined (swarmnode {e.record.software_version or '?'}, {_state(e)}; "
             f"{_count(total)} now)" for e in joined[:MAX_NAMED]]
    if len(joined) > MAX_NAMED:
        lines.append(f"{len(joined) - MAX_NAMED} more peers joined ({_count(total)} now)")
    return lines


def left_lines(left: list[str], expired: set[str], total: int) -> list[str]:
    lines = [f"peer {short_id(p)} left ("
             f"{'its record expired' if p in expired else 'dropped: the peer table is full (limits.max_peers)'}; "
             f"{_count(total)} now)" for p in left[:MAX_NAMED]]
    if len(left) > MAX_NAMED:
        lines.append(f"{len(left) - MAX_NAMED} more peers left ({_count(total)} now)")
    return lines


def other_base_line(peer_id: str, their_base: str, own_base: str) -> str:
    return (f"peer {short_id(peer_id)} started from other base weights (base {their_base}, this node's {own_base}): "
            "rollouts are shared with it (re-scored by the receiver), gradient summaries are not exchanged with it")


def incompatible_line(peer: IncompatiblePeer, ours: VersionRange) -> str:
    who = f"peer {short_id(peer.peer_id)} (swarmnode {peer.software_version or '?'})"
    return describe_incompatible(who, peer.versions, ours)


class PeerLog:
    """What the log has been told of the peer table: who is in it, and which peers of another
    base or of other protocol versions were named (at most `capacity` remembered each);
    `versions`: the protocol versions this node speaks."""

    def __init__(self, capacity: int = 1024, initial_peers: Iterable[str] = (),
                 versions: VersionRange = THIS_RELEASE.spoken):
        self.versions = versions
        self._known: set[str] = set()
        self._other_base_named: LRUMap[str, str] = LRUMap(capacity)  # peer -> the base it was named with
        self._incompatible_named: LRUMap[str, VersionRange] = LRUMap(capacity)  # peer -> the versions named
        self._other_window_named: LRUMap[str, float] = LRUMap(capacity)  # peer -> the window_s named
        # The initial peers (their ids from their multiaddrs): the daemon names those of other versions.
        self._named_by_join = {peer_id_of(maddr) for maddr in initial_peers}

    def lines(self, entries: list[PeerEntry], expired: list[str], own_base: str) -> list[str]:
        """The lines the table's change since the last call makes: joins, leaves, and each peer
        of another base not named yet (once this node knows its own base)."""
        current = {e.peer_id for e in entries}
        joined = [e for e in entries if e.peer_id not in self._known]
        left = sorted(self._known - current)
        self._known = current
        out = joined_lines(joined, len(current)) + left_lines(left, set(expired), len(current))
        if not own_base:
            return out
        unnamed = [e for e in entries if e.base_fingerprint and e.base_fingerprint != own_base
                   and self._other_base_named.peek(e.peer_id) != e.base_fingerprint]
        for e in unnamed[:MAX_NAMED]:  # the rest at the next calls: a bounded number of lines each time
            self._other_base_named[e.peer_id] = e.base_fingerprint
            out.append(other_base_line(e.peer_id, e.base_fingerprint, own_base))
        return out

    def incompatible_lines(self, peers: list[IncompatiblePeer], ours: VersionRange) -> list[str]:
        """A line for each peer of versions that do not overlap `ours` not named yet with these
        versions (at most MAX_NAMED a call: the rest at the next calls)."""
        unnamed = [p for p in peers if p.peer_id not in self._named_by_join
                   and self._incompatible_named.peek(p.peer_id) != p.versions]
        for p in unnamed[:MAX_NAMED]:
            self._incompatible_named[p.peer_id] = p.versions
        return [incompatible_line(p, ours) for p in unnamed[:MAX_NAMED]]

    def other_window_lines(self, origins: list[RecordOrigin], window_s: float) -> list[str]:
        """A line for each peer of another swarm.window_s not named yet with that window (initial
        peers are the join check's; at most MAX_NAMED a call: the rest at the next calls)."""
        unnamed = [o for o in origins if o.peer_id not in self._named_by_join
                   and self._other_window_named.peek(o.peer_id) != o.window_s]
        for o in unnamed[:MAX_NAMED]:
            self._other_window_named[o.peer_id] = o.window_s
        return [other_window_line(o, window_s) for o in unnamed[:MAX_NAMED]]

    def update(self, entries: list[PeerEntry], expired: list[str], own_base: str,
               incompatible: Iterable[IncompatiblePeer] = (), other_window: Iterable[RecordOrigin] = (),
               window_s: float = 0.0) -> None:
        for line in self.lines(entries, expired, own_base):
            log.info("%s", line)
        for line in self.incompatible_lines(list(incompatible), self.versions):
            log.warning("%s", line)
        for line in self.other_window_lines(list(other_window), window_s):
            log.warning("%s", line)


def window_text(window_s: float) -> str:
    return f"{window_s:g} s"


def other_window_line(origin: RecordOrigin, window_s: float) -> str:
    """A peer met publishing under another swarm.window_s: neither node can see the other's
    records, and which of them is set wrong is the operator's to know."""
    return (f"peer {short_id(origin.peer_id)} runs swarm.window_s {window_text(origin.window_s)}, this node "
            f"{window_text(window_s)}: neither sees the other's records; every node of a swarm must share "
            f"swarm.window_s (set the swarm's own on the node that differs)")


def describe_mismatch(origin: RecordOrigin, swarm: str, versions: VersionRange, window_s: float = 0.0) -> str:
    """One line: the initial peer belongs to another swarm, speaks protocol versions this node
    does not (in the words of the peer log's line: which side should upgrade), or runs another
    swarm.window_s (its own is the swarm's: this node should take it)."""
    if origin.swarm == swarm and common_version(versions, origin.versions) is None:
        return describe_incompatible(f"initial peer {origin.peer_id}", origin.versions, versions)
    if origin.swarm == swarm and origin.window_s and window_s and origin.window_s != window_s:
        return (f"initial peer {origin.peer_id} runs swarm.window_s {window_text(origin.window_s)}, this node "
                f"{window_text(window_s)}: set swarm.window_s: {origin.window_s:g} (every node of a swarm must "
                "share it)")
    return (f"initial peer {origin.peer_id} is in swarm '{origin.swarm}' while this node is in swarm '{swarm}': "
            f"it cannot join through it; give the address of a node of '{swarm}', or set swarm.name to "
            f"'{origin.swarm}' to join that swarm")
