"""Earned trust: each same-base peer's summaries scored by what they do for this node.

The evidence is the agreement a = cos(d_j, D) of a peer's summary d_j with this node's own
direction D (OuterLoop.direction): a decaying sum of the loss gradients of this node's own
local steps, about its last DIRECTION_MEMORY_STEPS (summaries/state.py), with the part of d_j
that only echoes this node's own published summaries taken out (summaries/echo.py). So d_j . D
is, to first order, how much applying the peer's delta lowers this node's loss on the groups it
trained on: Templar's Gauntlet score (loss before minus loss after a peer's update, on data the
receiver replays) without a forward pass.

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
end up distrusted. Even then the scale only scales r, it cannot turn its sign.

A peer's score is what its summaries since its credit last ended say, on average, with its
starting score s0 (a newcomer's `initial`, or the standing a restart restored, at most FULL_AT)
counted as PRIOR_WEIGHT summaries; the score sets its trust:

    s = (sum of its last CREDIT_WINDOW r since its credit last ended + PRIOR_WEIGHT x s0)
        / (their count + PRIOR_WEIGHT),
    trust = clamp(s / FULL_AT, 0, 1)

(an honest newcomer reaches full trust in one to three summaries that agree). A mean, not a
score that jumps towards each r: where honest summaries share little direction (tiny batches,
short H) an honest peer's r is close to a coin toss, and a score that fell by half the distance
to every negative r left it under the skip threshold a third of the time; over its last 32
summaries a mean of +0.3 stands clear of zero, and a sign flipper's -0.3 sinks under it.

Trust is credit for the next summaries, never for one that turns against its sender's own
record. A summary is *out of character* when r < 0 and, with at least SURPRISE_MIN earlier r
of this peer to compare with,

    r < mean(recent r) - SURPRISE_Z x max(stdev(recent r), SPREAD_FLOOR):

a peer whose summaries agreed steadily and now points the other way (a turncoat) is out of
character with its first flipped summary; an honest peer whose r is a coin toss never is. The
credit its sender earned before is then gone, a restored standing's included: its score starts
again, as a newcomer's (s0 at most `initial`), from that r, which for any r under
-PRIOR_WEIGHT x s0 leaves it under zero and the summary unmerged; an out-of-character summary
with r <= VETO_AT is counted as vetoed (`against_direction`). A turncoat whose summaries agreed
steadily gets its flipped ones in only where their evidence is weak: its first clear one is out
of character, and its later ones meet a score made of hostile summaries alone. What this does
not catch: a turn too gradual or too weak to be out of character (each negative r widens the
spread its next one is compared with), and a turn within a peer's first SURPRISE_MIN summaries
after this node restarted (the record is not saved). Where honest
summaries share little direction a turn is no surprise: a turncoat's flipped summaries then go
in until the credit of its honest ones runs out (about half of its next 15 in
scripts/experiments/trust_rule_sim.py), each as little evidence either way as an honest one.
Under `skip_below` a summary is judged but not merged. Blame waits for steady evidence: a peer
is struck (`harmful_summary`) for a summary when the r of its last STRIKE_WINDOW judged
summaries, at least STRIKE_MIN of them, have a mean under HARMFUL_MEAN that is also STEADY_Z
standard errors under zero, the error counted over as many independent summaries as the r
are worth:

    mean(r) < HARMFUL_MEAN  and  mean(r) < -STEADY_Z x stdev(r) / sqrt(n_eff),
    n_eff = n (1 - rho) / (1 + rho),  rho = clamp(lag-1 autocorrelation of the r, RHO_FLOOR, RHO_MAX)

(a sign flip's r sits near -1 every time; an honest peer whose r is close to a coin toss has
runs of negative ones, but not steady ones). Why n_eff and not n: a peer's successive r are
not independent draws. This node's direction remembers ~DIRECTION_MEMORY_STEPS local steps and
an honest peer's Adam momentum ~10, so two honest nodes' agreement keeps its sign for many
summaries in a row (lag-1 autocorrelation +0.60, +0.11 and +0.77 for the honest peer in three
logged runs of the 11-daemon dishonest-peers test at 4 x 4, H = 4). Counted as n
independent summaries, such a run of negative r read as steady evidence and struck an honest
peer four times in a row. A window's own estimate of rho is too short to trust (over n values
it reads low by about (1 + 4 rho) / n, so 0.6 over 8 to 16 values is a rho of 0.8 or more),
hence the floor RHO_FLOOR: on AR(1) agreements at rho 0.6 the floor cuts the honest strikes
from 25% to 2% of runs of 30 summaries (mean a tenth of the spread), and a steady flip, whose
r hardly vary, is still struck from its 6th summary
(`scripts/experiments/strike_rule_sim.py --rho 0.6`). An
exact repeat of one of a peer's recent summaries (no honest node's error feedback sends the
same values twice) counts as r = -1, is skipped and struck at once (`repeated_summary`), and
ends its credit like a veto.
"""
from __future__ import annotations

import math
import statistics
import threading
from collections import deque
from dataclasses import dataclass, field

from swarmnode.utils.lru_map import LRUMap

PRIOR_WEIGHT = 2.0  # the starting score counts as this many summaries in the mean
CREDIT_WINDOW = 32  # the summaries since its credit last ended a peer's score is the mean of
FULL_AT = 0.3  # a score at which trust is full
# Out of character: at least 6 earlier r to compare with, 3 spreads under their mean, the spread
# at least 0.4, so that a steady agreer's first flipped summary is (mean 0.8: 0.8 - 1.2 = -0.4)
# and a noisy honest peer's bad luck is not. On r like an honest peer's at 4 x 4, H = 4 (N(0.36,
# 1) clamped), 2 spreads of at least 0.25 over 4 earlier r called enough of its summaries out of
# character to merge 65% of them; these bounds merge 81%, and a steady agreer that flips gets
# 0.16 of 15 flipped summaries in, against none with those bounds
# (scripts/experiments/trust_rule_sim.py --runs 300).
SURPRISE_MIN, SURPRISE_Z, SPREAD_FLOOR = 6, 3.0, 0.4
# A strike needs the mean r of the peer's last 16 judged summaries (6 at least) under -0.5 and
# 3 standard errors under zero. Where honest summaries carry little shared direction (tiny
# batches, short H) an honest peer's r is nearly a coin toss: a mean of -0.25 over 4 came up about
# one window in three, and -0.5 over 6 of the last 8 struck a peer in 16% of simulated runs of 30
# summaries when its mean agreement was a tenth of its spread, 26% for a coin toss; 3 standard
# errors over n independent r 1.7% and 3.0% (over n_eff, below, none), and a steady sign
# flip still from its 6th summary (`scripts/experiments/strike_rule_sim.py --runs 300
# --summaries 30 --rho 0`).
HARMFUL_MEAN = -0.5
STRIKE_WINDOW, STRIKE_MIN = 16, 6
STEADY_Z = 3.0
# How much a peer's successive r are taken to repeat each other: at least RHO_FLOOR (a window
# of 16 is then worth 1.8 independent summaries), at most RHO_MAX (0.84 of 16): only r that
# hardly vary (a steady flip) strike on a short record.
RHO_FLOOR, RHO_MAX = 0.8, 0.9
VETO_AT = -0.5  # an out-of-character summary with evidence at or under this counts as vetoed
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


def credit_score(credit: list[float], prior: float) -> float:
    """s = (sum(credit) + PRIOR_WEIGHT x prior) / (len(credit) + PRIOR_WEIGHT)."""
    return (sum(credit) + PRIOR_WEIGHT * prior) / (len(credit) + PRIOR_WEIGHT)


def out_of_character(evidence: float, record: list[float]) -> bool:
    """r < 0, len(record) >= SURPRISE_MIN and
    r < mean(record) - SURPRISE_Z x max(stdev(record), SPREAD_FLOOR)."""
    if evidence >= 0 or len(record) < SURPRISE_MIN:
        return False
    spread = max(statistics.stdev(record), SPREAD_FLOOR)
    return evidence < statistics.mean(record) - SURPRISE_Z * spread


def lag1_autocorrelation(values: list[float]) -> float:
    """rho = sum_i (x_i - m)(x_{i+1} - m) / sum_i (x_i - m)^2, m the mean; 0 for fewer than 3
    values or none that differ."""
    if len(values) < 3:
        return 0.0
    m = statistics.mean(values)
    spread = sum((x - m) ** 2 for x in values)
    if spread == 0:
        return 0.0
    return sum((a - m) * (b - m) for a, b in zip(values, values[1:])) / spread


def effective_count(n: int, rho: float) -> float:
    """n_eff = n (1 - rho) / (1 + rho): how many independent values n values of an AR(1) series
    with lag-1 autocorrelation rho are worth for a mean (rho clamped to [0, RHO_MAX])."""
    rho = max(0.0, min(RHO_MAX, rho))
    return n * (1 - rho) / (1 + rho)


def harmful(recent_evidence: list[float]) -> bool:
    """n >= STRIKE_MIN, mean(r) < HARMFUL_MEAN and mean(r) < -STEADY_Z x stdev(r) / sqrt(n_eff),
    n_eff = effective_count(n, max(RHO_FLOOR, lag1_autocorrelation(r)))."""
    n = len(recent_evidence)
    if n < STRIKE_MIN:
        return False
    mean = statistics.mean(recent_evidence)
    n_eff = effective_count(n, max(RHO_FLOOR, lag1_autocorrelation(recent_evidence)))
    return mean < HARMFUL_MEAN and mean < -STEADY_Z * statistics.stdev(recent_evidence) / math.sqrt(n_eff)


def trust_of(score: float) -> float:
    """trust = clamp(s / FULL_AT, 0, 1)."""
    return max(0.0, min(1.0, score / FULL_AT))


def score_of(trust: float) -> float:
    """The score whose trust is `trust` (0..1): s = trust x FULL_AT."""
    return trust * FULL_AT


def skip_reason(repeated: bool, vetoed: bool, trust: float, skip_below: float) -> str | None:
    """Why a judged summary is not merged (None: merged): a repeat, a veto, too little trust."""
    if repeated:
        return REPEATED
    if vetoed:
        return VETOED
    return LOW_TRUST if trust < skip_below else None


@dataclass
class PeerTrust:
    prior: float  # its starting score: a newcomer's initial, or a restored standing
    score: float = field(init=False)
    judged: int = 0  # summaries scored
    merged: int = 0
    skipped: int = 0
    harmful: int = 0  # summaries that struck it
    agreement: float | None = None  # a of its last summary
    digests: deque = field(default_factory=lambda: deque(maxlen=DIGESTS_KEPT))
    evidence: deque = field(default_factory=lambda: deque(maxlen=STRIKE_WINDOW))  # its recent r
    credit: deque = field(default_factory=lambda: deque(maxlen=CREDIT_WINDOW))  # its r since its credit last ended
    abs_recent: deque = field(default_factory=lambda: deque(maxlen=VOTE_WINDOW))  # its recent |a|: its vote

    def __post_init__(self):
        self.score = self.prior


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
            turned = out_of_character(evidence, list(t.evidence))
            vetoed = turned and evidence <= VETO_AT
            if repeated or turned:  # what it earned before does not pay for what it sends now
                t.credit.clear()
                t.prior = min(t.prior, self.initial_score)
            t.credit.append(evidence)
            t.score = credit_score(list(t.credit), t.prior)
            t.evidence.append(evidence)
            t.judged += 1
            t.agreement = agreement
            trust = trust_of(t.score)
            skipped = skip_reason(repeated, vetoed, trust, self.skip_below)
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
        """Bring back a standing saved by an earlier run (score clamped to [-1, FULL_AT])."""
        with self._lock:
            # At most FULL_AT: a standing counts as PRIOR_WEIGHT summaries of full trust at best.
            self._peers[peer] = PeerTrust(max(-1.0, min(FULL_AT, float(score))), judged=max(0, int(judged)))

    def saved(self, peers: list[str]) -> list[tuple[str, float, int]]:
        """(peer, score, judged) of `peers`, for the standing store."""
        with self._lock:
            # peek: saving must not refresh a peer's place in the book (eviction follows judging)
            return [(p, t.score, t.judged) for p in peers if (t := self._peers.peek(p)) is not None]

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
