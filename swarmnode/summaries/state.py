"""The outer loop's state on one node: anchor, momentum, error-feedback residual, and the inbox
of peers' checked summaries. Called on the trainer thread (outer steps) and the gossip worker
threads (inbox); no network or disk I/O here.
"""
from __future__ import annotations

import dataclasses
import math
import random
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field

import torch
from torch import Tensor

from swarmnode.protocol.generated import gradient_summary_pb2 as pb
from swarmnode.summaries.compress import CompressionConfig, compress
from swarmnode.summaries.outer import (
    frequency_corrections,
    global_norm,
    merge_pseudo_gradients,
    outer_update,
    peer_weights,
    pseudo_gradient,
)
from swarmnode.summaries.echo import OwnSummaries
from swarmnode.summaries.robust import robust_merge
from swarmnode.summaries.trust import TrustBook, Verdict
from swarmnode.utils.lru_map import LRUMap

OWN_NORMS_KEPT = 8  # the norm bound looks at this node's last few summaries
# Peers are judged against this node's own direction over time: an exponential sum of the loss
# gradients of its local steps, so d . D is, to first order, how much a peer's delta lowers this
# node's loss on the groups it trained on (a first-order Gauntlet score). Not its own
# pseudo-gradients: those are Adam steps, m / sqrt(v), and each node's v shapes its deltas the
# same way for hundreds of steps; two nodes' deltas then agree or disagree by the chance overlap
# of those shapes, with a sign that held for a whole run (an honest peer read r = -1 nine times
# in a row in the 10-node dishonest-peers test). A raw gradient carries no such shape, so a long
# memory averages its noise away instead of keeping a bias: remembering ~200 local steps
# (decay 0.98 an outer step at H = 4) rather than 5 outer steps (0.8) raised an honest peer's
# merges at 4 x 4 from 52% to 65% and cut a flipper's from 4.7 to 1.8 of 29
# (scripts/experiments/trust_sim.py, 6 seeds). The memory is counted in local steps, so that
# it holds about as many samples whatever H.
DIRECTION_MEMORY_STEPS = 200
MERGES_REMEMBERED = 32  # outer steps whose partners count in the frequency correction


@dataclass(frozen=True)
class OuterConfig:
    every_steps: int = 20
    outer_lr: float = 1.0
    outer_momentum: float = 0.5
    nesterov: bool = True
    partners_per_step: int = 2
    staleness_exponent: float = 1.0
    max_staleness: int = 4
    compression: CompressionConfig = field(default_factory=CompressionConfig)
    robust: bool = True  # clipped, trust-weighted mean (summaries/robust.py); False: the plain weighted mean
    trust_initial: float = 0.2
    trust_skip_below: float = 0.15


@dataclass
class Received:
    peer: str
    tensors: dict[str, Tensor]
    norm: float
    outer_step: int  # this node's outer step count when it arrived (its clock, not the sender's)
    arrived_at: float  # time.monotonic()
    digest: bytes | None = None  # identifies its values: a peer repeating a summary is caught
    sent_at: float | None = None  # when its sender says it made it (its created_at): for the log only


class SummaryInbox:
    """The newest checked summary of each peer, bounded by peer count, each merged at most once."""

    def __init__(self, max_peers: int):
        self._latest: LRUMap[str, Received] = LRUMap(max_peers)
        self._lock = threading.Lock()
        self.stale_dropped = 0

    def put(self, item: Received) -> None:
        with self._lock:
            self._latest[item.peer] = item  # a newer summary replaces an unmerged older one

    def take(self, count: int, outer_step: int, max_staleness: int, rng: random.Random) -> list[Received]:
        """Up to `count` summaries drawn pseudo-randomly among those at most `max_staleness` of
        this node's outer steps old; older ones are dropped. Taken summaries leave the inbox."""
        with self._lock:
            items = list(self._latest.items())
            fresh = []
            for peer, item in items:
                if outer_step - item.outer_step > max_staleness:
                    self._latest.pop(peer)
                    self.stale_dropped += 1
                else:
                    fresh.append(item)
            chosen = rng.sample(fresh, min(count, len(fresh)))
            for item in chosen:
                self._latest.pop(item.peer)
            return chosen

    def __len__(self) -> int:
        with self._lock:
            return len(self._latest)


def fetch_allowance(partners_per_step: int, started_this_step: int, waiting: int) -> int:
    """Summaries to start fetching now, so that each outer step fetches and checks about as many
    as it will merge:

        allowance = max(0, partners_per_step - max(started_this_step, waiting))

    where started_this_step counts fetches begun since this node's last outer step and waiting
    the checked summaries in the inbox (those begun this step that already arrived are in both,
    hence the max, not the sum). A failed or rejected fetch uses its place: a peer cannot make
    this node check more than partners_per_step summaries per outer step."""
    return max(0, partners_per_step - max(started_this_step, waiting))


@dataclass
class OuterResult:
    tensors: list[pb.CompressedTensor] | None  # this node's summary to publish (None: nobody to send to)
    partners: list[str]  # the peers whose summaries were merged
    seconds: float  # wall
    cpu_seconds: float  # this thread's CPU time: the work itself, without waiting for the cores
    norm: float | None
    verdicts: list[Verdict] = field(default_factory=list)  # every summary taken from the inbox, merged or not
    weights: list[float] = field(default_factory=list)  # each merged partner's weight w_j (staleness, frequency)
    clip_factors: list[float] = field(default_factory=list)  # each merged partner's clip (1: not clipped)


def direction_decay(every_steps: int) -> float:
    """exp(-H / DIRECTION_MEMORY_STEPS): the direction's decay per outer step of H local steps
    (0.980 at H = 4, 0.905 at H = 20)."""
    return math.exp(-every_steps / DIRECTION_MEMORY_STEPS)


class OuterLoop:
    """DiLoCo-style outer loop over a model's trainable parameters."""

    def __init__(self, model: torch.nn.Module, config: OuterConfig, *, max_peers: int = 1024, seed: int = 0):
        self.config = config
        self.params = dict(model.named_parameters())
        self.shapes = {name: tuple(p.shape) for name, p in self.params.items()}
        self.anchor = {name: p.detach().to(torch.float32).cpu().clone() for name, p in self.params.items()}
        self.momentum = {name: torch.zeros_like(t) for name, t in self.anchor.items()}
        self.residual = {name: torch.zeros_like(t) for name, t in self.anchor.items()}
        self.direction = {name: torch.zeros_like(t) for name, t in self.anchor.items()}
        # The loss gradients of the local steps since the last outer step (add_gradient), on the
        # gradients' device: a GPU node copies them to the CPU once an outer step, not every step.
        self.gradient_sum: dict[str, Tensor] = {}
        self.gradients_added = 0
        self.own_sent = OwnSummaries()  # what this node published lately: an echo of it earns nothing
        self.direction_decay = direction_decay(config.every_steps)
        self.inbox = SummaryInbox(max_peers)
        self.trust = TrustBook(max_peers, initial=config.trust_initial, skip_below=config.trust_skip_below,
                               parameters=sum(t.numel() for t in self.anchor.values()), acting=config.robust)
        self.outer_steps = 0
        self.own_norms: deque[float] = deque(maxlen=OWN_NORMS_KEPT)
        # The partners of the last outer steps (bounded: MERGES_REMEMBERED x partners_per_step ids).
        self.recent_partners: deque[tuple[str, ...]] = deque(maxlen=MERGES_REMEMBERED)
        self.seed = seed
        self._lock = threading.Lock()  # outer_steps is read by gossip threads

    def clock(self) -> int:
        with self._lock:
            return self.outer_steps

    def add_gradient(self) -> None:
        """Add the loss gradient of the local step just taken (the parameters' .grad) to this
        outer step's evidence (trainer thread, after a step that trained)."""
        with torch.no_grad():
            for name, p in self.params.items():
                if p.grad is not None:
                    if name not in self.gradient_sum:
                        self.gradient_sum[name] = torch.zeros_like(p.grad, dtype=torch.float32)
                    self.gradient_sum[name].add_(p.grad.detach())
        self.gradients_added += 1

    def step(self, publish: bool) -> OuterResult:
        """One outer step: compress this node's pseudo-gradient (when `publish`), judge up to
        partners_per_step peers' summaries against it (summaries/trust.py), merge the trusted
        ones (summaries/robust.py) and write the new anchor into the model. Without a partner
        the anchor simply moves to the current weights (a lone node trains exactly as without
        summaries)."""
        start, cpu_start = time.perf_counter(), time.thread_time()
        c = self.config
        weights = {name: p.detach().cpu() for name, p in self.params.items()}
        own = pseudo_gradient(self.anchor, weights)
        # Without recorded gradients (a caller with no trainer) the own delta stands in.
        for name, d in self.direction.items():
            d.mul_(self.direction_decay)
            if not self.gradients_added:
                d.add_(own[name])
            elif name in self.gradient_sum:
                d.add_(self.gradient_sum[name].to("cpu"))
        for g in self.gradient_sum.values():
            g.zero_()
        self.gradients_added = 0
        tensors, norm = None, None
        if publish:
            tensors, sent, self.residual = compress(own, self.residual, c.compression)
            norm = global_norm(sent)
            self.own_norms.append(norm)
            self.own_sent.add(sent)
        rng = random.Random(f"{self.seed}/{self.outer_steps}")
        taken = self.inbox.take(c.partners_per_step, self.outer_steps, c.max_staleness, rng)
        verdicts = self._judge(taken)
        partners = [p for p, v in zip(taken, verdicts) if v.skipped is None]
        self.recent_partners.append(tuple(p.peer for p in partners))
        peer_w, factors = [], []
        if partners:
            ages = [self.outer_steps - p.outer_step for p in partners]
            merged = Counter(peer for step in self.recent_partners for peer in step)
            corrections = frequency_corrections(merged, [p.peer for p in partners])
            peer_w = peer_weights(ages, c.staleness_exponent, corrections)
            if c.robust:
                trust = {v.peer: v.trust for v in verdicts}
                g, factors = robust_merge(own, [(p.tensors, w, trust[p.peer]) for p, w in zip(partners, peer_w)])
            else:
                g = merge_pseudo_gradients(own, list(zip((p.tensors for p in partners), peer_w)))
                factors = [1.0] * len(partners)
            for name in self.anchor:
                outer_update(self.anchor[name], self.momentum[name], g[name], lr=c.outer_lr, mu=c.outer_momentum,
                             nesterov=c.nesterov)
            with torch.no_grad():
                for name, p in self.params.items():
                    p.copy_(self.anchor[name].to(p.dtype))
        else:
            for name, w in weights.items():
                self.anchor[name].copy_(w)
        with self._lock:
            self.outer_steps += 1
        return OuterResult(tensors, [p.peer for p in partners], time.perf_counter() - start,
                           time.thread_time() - cpu_start, norm, verdicts, peer_w, factors)

    def _judge(self, taken: list[Received]) -> list[Verdict]:
        """Each taken summary's verdict, on its echo-free agreement with this node's direction."""
        if not taken:
            return []
        direction_norm = global_norm(self.direction)
        own_on_direction = self.own_sent.on(self.own_sent.flat(self.direction))
        # A received summary's norm was computed by its check (0.0 where a caller did not say).
        return [dataclasses.replace(
                    self.trust.judge(p.peer, self.own_sent.agreement(p.tensors, p.norm or global_norm(p.tensors),
                                                                     self.direction, direction_norm, own_on_direction),
                                     p.digest),
                    sent_at=p.sent_at)
                for p in taken]

    # -- checkpoints ---------------------------------------------------------------------------

    def state_tensors(self) -> dict[str, Tensor]:
        """anchor / momentum / residual / direction as one flat dict (for safetensors)."""
        out = {}
        for prefix, tensors in self._state_parts():
            out.update({f"{prefix}.{name}": t.clone() for name, t in tensors.items()})
        return out

    def _state_parts(self):
        return (("anchor", self.anchor), ("momentum", self.momentum), ("residual", self.residual),
                ("direction", self.direction))

    def state_meta(self) -> dict:
        return {"outer_steps": self.outer_steps, "own_norms": list(self.own_norms),
                "recent_partners": [list(step) for step in self.recent_partners],
                "agreement_votes": self.trust.votes()}

    def load(self, tensors: dict[str, Tensor], meta: dict) -> None:
        """Resume from `state_tensors` / `state_meta` (a checkpoint of the same model)."""
        for prefix, target in self._state_parts():
            for name in target:
                key = f"{prefix}.{name}"
                if key in tensors or prefix != "direction":  # a checkpoint of an older release has no direction
                    target[name].copy_(tensors[key])
        self.outer_steps = int(meta.get("outer_steps", 0))
        self.own_norms.extend(float(x) for x in meta.get("own_norms", []))
        votes = meta.get("agreement_votes")
        if isinstance(votes, dict):
            self.trust.restore_votes({p: a for p, a in votes.items() if isinstance(a, (int, float)) and math.isfinite(a)})
        # The frequency correction's memory (peer ids this node verified when it merged them);
        # bounded like the live deque, whatever the file holds.
        for step in list(meta.get("recent_partners", []))[-MERGES_REMEMBERED:]:
            self.recent_partners.append(tuple(str(peer) for peer in list(step)[:self.config.partners_per_step]))
