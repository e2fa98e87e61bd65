"""Every peer's standing with this node, one per peer whatever it sends (rollout batches,
gradient summaries): a peer ignored for bad summaries is ignored for rollouts too.

A rejection is counted by reason and sender (MessageStats) and, a rollout's, by reason in
status `rollouts`; it is written to SQLite with its detail, and strikes the sender unless an
honest peer could have caused it (NOT_STRIKES); a peer past rollouts.strike_limit strikes
within rollouts.strike_window_s is ignored for rollouts.ignore_s. Standings (and peers'
summary trust) are saved as they change, so a restart pardons no recent offender.
"""
from __future__ import annotations

import logging
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from swarmnode.config import NodeConfig
from swarmnode.protocol.codec import RejectReason
from swarmnode.store.rollout_store import RolloutStore
from swarmnode.store.standing import StandingRow, StandingStore
from swarmnode.swarm.peers import MessageStats
from swarmnode.swarm.penalties import PeerPenalties
from swarmnode.swarm.gossip.rollout_bookkeeping import SenderLedger

log = logging.getLogger("swarmnode.gossip")
# Counted, dropped, but not strikes: an honest peer may differ this way (another tokenizer makes
# longer completions here; its policy may drift from ours on the odd sample), and a liar gains
# nothing from either (the samples never reach the loss).
# The same goes for a batch too old (a slow peer's, or one kept since before our restart) or
# too new (a peer with a skewed clock): its cursor moves past it, so it costs nothing twice.
# A batch or summary in a protocol version this node does not speak is no offence either: the
# peer runs another swarmnode (its records say which; one side should upgrade).
NOT_STRIKES = frozenset({RejectReason.TOO_LONG, RejectReason.IMPLAUSIBLE_LOGPROBS, RejectReason.EXPIRED,
                         RejectReason.FROM_FUTURE, RejectReason.INCOMPATIBLE_VERSION})
STANDINGS_FILE = "rollouts.sqlite"


def saved_trust(rows: list[StandingRow]) -> list[tuple[str, float, int]]:
    """(peer, trust score, times judged) of the saved rows that hold a summary trust."""
    return [(row.peer, row.trust_score, row.trust_judged) for row in rows if row.trust_score is not None]


REJECTIONS_PENALTY_CAP = 60.0  # rejected messages counted in a GossipSub penalty


# The kinds of message a peer's standing answers for (MessageStats counts accepted ones by them).
ROLLOUT_GROUP = "rollout_group"
GRADIENT_SUMMARY = "gradient_summary"


@dataclass(slots=True)
class StandingCounters:
    """The status `rollouts` counters the standings keep (worker and trainer threads add to them).

    Rollout rejections are kept by reason only: their total is the sum, so the two never disagree."""

    peers_ignored: int = 0
    store_errors: int = 0
    _rejected: Counter = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock)  # several worker threads blame at once

    def count_rejected(self, reasons: list[RejectReason]) -> None:
        with self._lock:
            self._rejected.update(reason.value for reason in reasons)

    def groups_rejected_by_reason(self) -> dict[str, int]:
        """Reason -> peers' rollout rejections (status `rollouts.groups_rejected_by_reason`)."""
        with self._lock:
            return dict(sorted(self._rejected.items()))


class PeerStandings:
    """The ledger of every peer (accepted, rejected, cursor, ignored until), `blame` for what a
    peer sent wrong, and the SQLite files that keep both: `received` (accepted groups and
    rejections, rollouts.sqlite) and the saved standings. Opens and closes those files.

    `blame` and the saving methods are thread-safe and blocking (SQLite): they are called from
    the event loop's worker threads and from the trainer thread."""

    def __init__(self, config: NodeConfig, stats: MessageStats, received: RolloutStore, saved: StandingStore,
                 clock: Callable[[], float], penalties: PeerPenalties | None = None):
        cfg, limits = config.rollouts, config.limits
        self.config = config
        self.stats = stats
        self.received = received
        self.saved = saved
        self.clock = clock  # DHT time: strikes and ignores are kept on it
        self.ledger = SenderLedger(cfg.strike_limit, cfg.strike_window_s, cfg.ignore_s, cfg.backlog_batches,
                                   max_peers=limits.max_tracked_senders)
        for row in saved.load(limits.max_tracked_senders):
            self.ledger.restore(row.peer, row.accepted, row.rejected, row.ignored_until, row.cursor)
        self.counters = StandingCounters()
        if penalties is not None:  # the transport's GossipSub scores read gossip_penalty from now on
            penalties.judged_by(self)

    @classmethod
    def open(cls, config: NodeConfig, stats: MessageStats, home_root: Path, clock: Callable[[], float],
             penalties: PeerPenalties | None = None) -> PeerStandings:
        """The standings kept in `home_root`/rollouts.sqlite."""
        path = home_root / STANDINGS_FILE
        received = RolloutStore(path)
        # Standings of up to 16x as many peers as memory holds: a restart pardons no recent offender.
        saved = StandingStore(path, max_rows=16 * config.limits.max_tracked_senders)
        return cls(config, stats, received, saved, clock, penalties)

    def close(self) -> None:
        self.received.close()
        self.saved.close()

    def blame(self, peer: str, batch_id: int | None, reasons: list[tuple[RejectReason, str]], weight: int = 1, *,
              kind: str = ROLLOUT_GROUP) -> None:
        """Count rejections against `peer` (a verified id), strike it `weight` times for each
        (see NOT_STRIKES), and write them down. `kind`: what was rejected; only rollouts' (a
        group, or a batch or response refused whole) count in status `rollouts`."""
        for reason, _ in reasons:
            self.stats.reject(reason, peer)
        if kind == ROLLOUT_GROUP:
            self.counters.count_rejected([reason for reason, _ in reasons])
        try:
            self.received.rejected(peer, batch_id, [(reason.value, detail) for reason, detail in reasons])
        except Exception as e:  # noqa: BLE001 - the counts above stand; the log says why the row is missing
            self.counters.store_errors += 1
            log.warning("storing rejections of %s failed (%s)", peer, e)
        strikes = weight * sum(1 for reason, _ in reasons if reason not in NOT_STRIKES)
        if strikes and self.ledger.record(peer, 0, strikes, self.clock()):
            cfg = self.config.rollouts
            self.counters.peers_ignored += 1
            log.warning("ignoring peer %s for %gs: %d rejected groups within %gs", peer, cfg.ignore_s,
                        cfg.strike_limit + 1, cfg.strike_window_s)
            self.save_now(peer)

    def gossip_penalty(self, peer: str, now: float) -> float:
        """What this node holds against `peer`, as a GossipSub application-score penalty: its
        strikes (SenderLedger.gossip_penalty: IGNORED_PENALTY while ignored) plus its rejected
        messages, at most REJECTIONS_PENALTY_CAP of them. A few bad messages cost a little; an
        ignored peer, or one with 50 rejections, is past the graylist threshold (-50)."""
        rejections = min(float(self.stats.rejected_from(peer)), REJECTIONS_PENALTY_CAP)
        return self.ledger.gossip_penalty(peer, now) + rejections

    def blame_implausible(self, senders: dict[str, int]) -> None:
        """The trainer's verdict on peers' samples whose log-probs inflate their weight."""
        for peer, samples in senders.items():
            self.blame(peer, None, [(RejectReason.IMPLAUSIBLE_LOGPROBS, f"{samples} samples")])

    def save_now(self, peer: str) -> None:
        """Write `peer`'s standing down (a failure is counted; memory still holds it)."""
        s = self.ledger.standing(peer)
        if not (s.accepted or s.rejected):
            return  # a stranger that never delivered anything: nothing worth keeping
        try:
            self.saved.save([StandingRow(peer, s.accepted, s.rejected, s.ignored_until, s.cursor)])
        except Exception as e:  # noqa: BLE001 - memory still holds the standing
            self.counters.store_errors += 1
            log.warning("saving the standing of %s failed (%s)", peer, e)

    def load_trust(self) -> list[tuple[str, float, int]]:
        """Peers' summary trust saved by an earlier run: (peer, score, times judged)."""
        return saved_trust(self.saved.load(self.config.limits.max_tracked_senders))

    def save_trust(self, rows: list[tuple[str, float, int]]) -> None:
        self.saved.save_trust(rows)
