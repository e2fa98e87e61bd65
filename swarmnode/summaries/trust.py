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

    r_j = clamp(a_j / scale, -1, 1),   scale = max(upper quartile of the peers' votes,
                                                    NOISE_SIGMAS / sqrt(P))

P is the number of parameters: two unrelated directions have cos ~ 1/sqrt(P), so a random
direction never looks like evidence. On the bundled policy a random direction gives
|a| ~ 0.001, honest peers and sign-flipped ones some +-0.01 to 0.03. Each peer has one vote
(the median |a| of its last VOTE_WINDOW summaries, over the last SCALE_WINDOW peers judged), so
a peer cannot stretch the scale by sending often. Why the upper quartile and not the median:
peers whose summaries carry no direction (random ones, colluders, echoes once this node's own
summaries are projected out, summaries/state.py) vote near zero; as a majority they pulled a
median down to the noise floor, every honest summary then read r = +-1 by its sign alone, and
a run of an honest peer's negative ones struck it. Raising the quartile takes a quarter of the
votes with |a| above the honest peers', that is summaries that agree (or disagree) with this
node's own direction more than honest ones do: the agreeing ones help, the disagreeing ones
are vetoed. Even then the scale only scales r, it cannot turn its sign.

Each judged summary moves the peer's score s towards r, faster down than up (RISE < FALL), and
the score sets its trust:

    s' = s + beta (r - s),  beta = RISE if r >= s else FALL
    trust = clamp(s / FULL_AT, 0, 1)

(an honest newcomer reaches full trust in one or two summaries). Trust is credit for the next
summaries, never for one that disagrees: a summary with r < 0 caps its own trust, and its
sender's, at once,

    trust' <= max(0, 1 + r / |VETO_AT|)      (r < 0),

and one with r <= VETO_AT is vetoed: skipped whatever its sender's trust (`against_direction`)
with the sender's trust at 0. A turncoat that earned full trust gets its first hostile summary
in only at the weight its own evidence leaves (none from VETO_AT down), and each later one
meets a score that the last at least halved.
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
VETO_AT = -0.5  # evidence at or under this vetoes a summary; between it and 0 it caps the trust
SCALE_QUANTILE = 0.75  # the votes' quantile that sets the scale (see the module docstring)
VOTE_WINDOW = 8  # a peer's recent |a| that make its vote in the scale
SCALE_WINDOW = 32  # the peers most recently judged, whose typical |agreement| set the scale
NOISE_SIGMAS = 3.0  # the scale is at least this many cos-of-unrelated-directions (1 / sqrt(P))
DIGESTS_KEPT = 8  # a peer's recent summaries remembered to catch a repeat
# Why a summary was skipped (status keys).
LOW_TRUST, REPEATED, VETOED = "low_trust", "repeated_summary", "against_direction"


def agreement_scale(votes: list[float], parameters: int) -> float:
    """max(upper quartile of the votes, NOISE_SIGMAS / sqrt(P)); the quartile is the
    ceil(0.75 n)-th smallest of the n votes (the largest of 1 or 2, the 3rd of 4)."""
    floor = NOISE_SIGMAS / math.sqrt(max(1, parameters))
    if not votes:
        return floor
    return max(sorted(votes)[math.ceil(SCALE_QUANTILE * len(votes)) - 1], floor)


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


def capped_score(score: float, evidence: float) -> float:
    """The score after a summary with evidence r: for r < 0, at most the score of trust
    max(0, 1 + r / |VETO_AT|) (0 from VETO_AT down); unchanged for r >= 0."""
    if evidence >= 0:
        return score
    return min(score, score_of(max(0.0, 1.0 + evidence / abs(VETO_AT))))


def trust_of(score: float) -> float:
    """trust = clamp(s / FULL_AT, 0, 1)."""
    return max(0.0, min(1.0, score / FULL_AT))


def score_of(trust: float) -> float:
    """The score whose trust is `trust` (0..1): s = trust x FULL_AT."""
    return trust * FULL_AT


def skip_reason(repeated: bool, evidence: float, trust: float, skip_below: float) -> str | None:
    """Why a judged summary is not merged (None: merged): a repeat, a veto, too little trust."""
    if repeated:
        return REPEATED
    if evidence <= VETO_AT:
        return VETOED
    return LOW_TRUST if trust < skip_below else None


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
    skipped: str | None  # LOW_TRUST, REPEATED, VETOED, or None (merged)
    harmful: bool  # strikes the peer
    sent_at: float | None = None  # the summary's created_at as its sender says (for the log)


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
        # One vote per peer, the median |a| of its recent summaries: a peer that sends often
        # moves the quartile by one place at most; and with a single peer the scale is its
        # typical |a|, not its last (which would make every honest summary r = +-1 by its sign).
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
            t.score = capped_score(updated_score(t.score, evidence), evidence)
            t.evidence.append(evidence)
            t.judged += 1
            t.agreement = agreement
            trust = trust_of(t.score)
            skipped = skip_reason(repeated, evidence, trust, self.skip_below)
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
