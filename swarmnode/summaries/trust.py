"""Earned trust: each same-base peer's summaries scored by what they do for this node.

The evidence is the agreement a = cos(d_j, D) of a peer's summary d_j with this node's own
direction D = sum_k decay^k own_{t-k}, its recent pseudo-gradients (OuterLoop.direction). Each
own is the sum of this node's H optimizer steps on its own recent groups, so d_j . D is, to
first order, how much applying the peer's delta lowers this node's loss on those groups:
Templar's Gauntlet score (loss before minus loss after a peer's update, on data the receiver
replays) without a forward pass. A summary this node merged and had to undo shows up too: its
next own deltas point against it.

Agreement has no fixed scale (it depends on the model, H, the compression), so it is read
against the typical agreement of the summaries this node judged lately:

    r_j = clamp(a_j / scale, -1, 1),   scale = max(median of |a| over the last SCALE_WINDOW
                                                    judged summaries, NOISE_SIGMAS / sqrt(P))

P is the number of parameters: two unrelated directions have cos ~ 1/sqrt(P), so a random
direction never looks like evidence. On the bundled policy a random direction gives
|a| ~ 0.001, honest peers and sign-flipped ones some +-0.01 to 0.03. Each peer has one vote in
the median (the median |a| of its last VOTE_WINDOW summaries), so a peer that echoes this node's own summary back cannot stretch
the scale by sending often; many such identities can (docs/security.md, what is left open). A median is set by the majority of what was judged: a minority cannot
move the scale far, and even a majority can only scale r, not turn its sign.

Each judged summary moves the peer's score s towards r, faster down than up (RISE < FALL), and
the score sets its trust:

    s' = s + beta (r - s),  beta = RISE if r >= s else FALL
    trust = clamp(s / FULL_AT, 0, 1)

(an honest newcomer reaches full trust in one or two summaries; one summary with r = -1 takes
a fully trusted peer to a score under 0).
A newcomer starts at trust `initial` and earns more. Under `skip_below` a summary is judged but
not merged. The score reacts within a summary or two, which is right for weights and wrong for
blame: an honest peer's agreement is noisy (its sign flips now and then), so a strike waits for
steady evidence. A peer is struck (`harmful_summary`) for a summary when the r of its last
STRIKE_WINDOW judged summaries, at least STRIKE_MIN of them, have a mean under HARMFUL_MEAN that
is also STEADY_Z standard errors under zero:

    mean(r) < HARMFUL_MEAN  and  mean(r) < -STEADY_Z x stdev(r) / sqrt(n)

(a sign flip's r sits near -1 every time; an honest peer whose r is close to a coin toss has
runs of negative ones, but not steady ones). An
exact repeat of one of a peer's recent summaries (no honest node's error feedback sends the
same values twice) counts as r = -1, is skipped and struck at once (`repeated_summary`).
"""
from __future__ import annotations

import math
import statistics
import threading
from collections import deque
from dataclasses import dataclass, field

from swarmnode.utils.lru_map import LRUMap

RISE, FALL = 0.25, 0.5  # score steps towards the evidence, up and down
FULL_AT = 0.3  # a score at which trust is full
# A strike needs the mean r of the peer's last 16 judged summaries (6 at least) under -0.5 and
# 3 standard errors under zero. Where honest summaries carry little shared direction (tiny
# batches, short H) an honest peer's r is nearly a coin toss: a mean of -0.25 over 4 came up about
# one window in three, and -0.5 over 6 of the last 8 struck a peer in 16% of simulated runs of 30
# summaries when its mean agreement was a tenth of its spread, 26% for a coin toss; this rule
# 1.3% and 3.7%, and a steady sign flip still from its 6th summary
# (`scripts/experiments/strike_rule_sim.py --runs 300 --summaries 30`).
HARMFUL_MEAN = -0.5
STRIKE_WINDOW, STRIKE_MIN = 16, 6
STEADY_Z = 3.0
VOTE_WINDOW = 8  # a peer's recent |a| that make its vote in the scale
SCALE_WINDOW = 32  # the peers most recently judged, whose typical |agreement| set the scale
NOISE_SIGMAS = 3.0  # the scale is at least this many cos-of-unrelated-directions (1 / sqrt(P))
DIGESTS_KEPT = 8  # a peer's recent summaries remembered to catch a repeat
LOW_TRUST, REPEATED = "low_trust", "repeated_summary"  # why a summary was skipped (status keys)


def agreement_scale(recent_abs: list[float], parameters: int) -> float:
    """max(median of the recent |a|, NOISE_SIGMAS / sqrt(P))."""
    floor = NOISE_SIGMAS / math.sqrt(max(1, parameters))
    return max(statistics.median(recent_abs), floor) if recent_abs else floor


def relative_agreement(agreement: float, scale: float) -> float:
    """r = clamp(a / scale, -1, 1)."""
    return max(-1.0, min(1.0, agreement / scale))


def updated_score(score: float, evidence: float) -> float:
    """s' = s + beta (r - s), beta = RISE when r >= s, FALL when r < s."""
    beta = RISE if evidence >= score else FALL
    return score + beta * (evidence - score)


def harmful(recent_evidence: list[float]) -> bool:
    """n >= STRIKE_MIN, mean(r) < HARMFUL_MEAN and mean(r) < -STEADY_Z x stdev(r) / sqrt(n)."""
    n = len(recent_evidence)
    if n < STRIKE_MIN:
        return False
    mean = statistics.mean(recent_evidence)
    return mean < HARMFUL_MEAN and mean < -STEADY_Z * statistics.stdev(recent_evidence) / math.sqrt(n)


def trust_of(score: float) -> float:
    """trust = clamp(s / FULL_AT, 0, 1)."""
    return max(0.0, min(1.0, score / FULL_AT))


def score_of(trust: float) -> float:
    """The score whose trust is `trust` (0..1): s = trust x FULL_AT."""
    return trust * FULL_AT


@dataclass
class PeerTrust:
    score: float
    judged: int = 0  # summaries scored
    merged: int = 0
    skipped: int = 0
    harmful: int = 0  # summaries that struck it
    agreement: float | None = None  # a of its last summary
    digests: deque = field(default_factory=lambda: deque(maxlen=DIGESTS_KEPT))
    evidence: deque = field(default_factory=lambda: deque(maxlen=STRIKE_WINDOW))  # its recent r
    abs_recent: deque = field(default_factory=lambda: deque(maxlen=VOTE_WINDOW))  # its recent |a|: its vote


@dataclass(frozen=True)
class Verdict:
    """What this node made of one peer summary at an outer step."""

    peer: str
    agreement: float  # a = cos(d_j, D), D this node's own direction
    evidence: float  # r
    trust: float  # after this summary
    skipped: str | None  # LOW_TRUST, REPEATED, or None (merged)
    harmful: bool  # strikes the peer


class TrustBook:
    """Every judged peer's trust, bounded by peer count (distrusted peers are evicted last: a
    flood of identities must not pardon them). Judged on the trainer thread, read by status
    and the fetch loop. With `acting` False (summaries.robust_merge off) peers are scored for
    status only: nothing is skipped or struck."""

    def __init__(self, max_peers: int, *, initial: float, skip_below: float, parameters: int, acting: bool = True):
        self.initial_score = score_of(initial)
        self.skip_below = skip_below
        self.parameters = parameters
        self.acting = acting
        # One vote per peer, the median |a| of its recent summaries: a peer that echoes this
        # node's own summary back (|a| near 1) moves the median by one place, however often it
        # sends; and with a single peer the scale is its typical |a|, not its last (which would
        # make every honest summary r = +-1 by its sign alone).
        self._votes: LRUMap[str, float] = LRUMap(SCALE_WINDOW)
        self._peers: LRUMap[str, PeerTrust] = LRUMap(max_peers, protect=lambda t: t.score < 0)
        self._lock = threading.Lock()

    @property
    def scale(self) -> float:
        """The agreement a peer needs for r = 1 now."""
        with self._lock:
            return agreement_scale(list(self._votes.values()), self.parameters)

    def votes(self) -> dict[str, float]:
        with self._lock:
            return dict(self._votes.items())

    def restore_votes(self, votes: dict[str, float]) -> None:
        with self._lock:
            for peer, a in list(votes.items())[-SCALE_WINDOW:]:
                self._votes[str(peer)] = min(1.0, abs(float(a)))

    def judge(self, peer: str, agreement: float, digest: bytes | None) -> Verdict:
        """Score one summary of `peer` (a verified id) and say whether to merge it. `digest`
        identifies the summary's values (None: not checked for a repeat)."""
        with self._lock:
            t = self._peers.setdefault(peer, lambda: PeerTrust(self.initial_score))
            repeated = digest is not None and digest in t.digests
            if digest is not None:
                t.digests.append(digest)
            if not repeated:
                t.abs_recent.append(abs(agreement))
                self._votes[peer] = statistics.median(t.abs_recent)
            scale = agreement_scale(list(self._votes.values()), self.parameters)
            evidence = -1.0 if repeated else relative_agreement(agreement, scale)
            t.score = updated_score(t.score, evidence)
            t.evidence.append(evidence)
            t.judged += 1
            t.agreement = agreement
            trust = trust_of(t.score)
            skipped = REPEATED if repeated else (LOW_TRUST if trust < self.skip_below else None)
            struck = repeated or harmful(list(t.evidence))
            if not self.acting:
                skipped, struck = None, False
            t.harmful += struck
            if skipped:
                t.skipped += 1
            else:
                t.merged += 1
            return Verdict(peer, agreement, evidence, trust, skipped, struck)

    def trust(self, peer: str) -> float:
        """The peer's trust now (a newcomer's: `initial`)."""
        with self._lock:
            t = self._peers.peek(peer)  # asking must not keep it in the book
            return trust_of(t.score if t is not None else self.initial_score)

    def merges(self, peer: str) -> bool:
        """Whether a summary of `peer` would be merged now (trusted at least `skip_below`)."""
        return not self.acting or self.trust(peer) >= self.skip_below

    def restore(self, peer: str, score: float, judged: int) -> None:
        """Bring back a standing saved by an earlier run (score clamped to [-1, 1])."""
        with self._lock:
            self._peers[peer] = PeerTrust(max(-1.0, min(1.0, float(score))), judged=max(0, int(judged)))

    def saved(self, peers: list[str]) -> list[tuple[str, float, int]]:
        """(peer, score, judged) of `peers`, for the standing store."""
        with self._lock:
            return [(p, t.score, t.judged) for p in peers if (t := self._peers.get(p)) is not None]

    def snapshot(self) -> dict[str, dict]:
        with self._lock:
            return {
                peer: {"trust": round(trust_of(t.score), 3), "score": round(t.score, 3), "judged": t.judged,
                       "merged": t.merged, "skipped": t.skipped, "harmful": t.harmful,
                       "agreement": None if t.agreement is None else round(t.agreement, 4)}
                for peer, t in self._peers.items()
            }

    def __len__(self) -> int:
        with self._lock:
            return len(self._peers)
