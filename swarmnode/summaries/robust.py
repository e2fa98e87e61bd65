"""Robust merging: what one dishonest same-base peer can do to this node's outer step is bounded.

A peer that started from the public base weights can send any well-formed summary under the
norm bound: its own update negated and scaled, a random direction, a small bias hidden in the
spread of honest updates. The plain weighted mean (outer.merge_pseudo_gradients) lets such a
summary dominate the outer step. Here each peer's delta is clipped to this node's own norm and
weighted by the trust it has earned (summaries/trust.py):

    g = (own + sum_j w_j t_j clip(d_j, tau)) / (1 + sum_j w_j),   clip(d, tau) = d min(1, tau / |d|),

    tau = CLIP_RATIO |own| = 2 |own|

w_j is the staleness and frequency weight (<= 1), t_j in [0, 1] the peer's trust. Peer j moves g
by at most w_j t_j tau / (1 + sum w) <= tau / 2 = |own|: never further than this node's own
delta does, whatever it sends. With trust 1 and no clip binding, g is the plain weighted mean.
A merged peer with trust t < 1 abstains for (1 - t) of its place (a zero delta, still counted
in the denominator), not a vote for this node's own direction; a peer trusted under
summaries.trust_skip_below is left out of the step altogether (summaries/trust.py). Why 2 |own| and not |own|: an honest peer's summary
carries its error-feedback residual and grows past the receiver's own delta norm over a run, so
clipped at |own| most honest summaries lose part of it, at 2 |own| they pass whole
(docs/experiments/summaries.md).

Why not CenteredClip around the own delta, g = own + sum_j w_j t_j clip(d_j - own, tau) / (1 + sum w)?
It has the stronger bound (|g - own| < |own|: no coalition turns the step around), but a
down-weighted peer there counts as agreeing with own, so g -> own as trust falls, and the outer
optimizer's Nesterov momentum (lr 1, mu 0.5) then steps 2x own; it learned worse than the plain
mean (docs/experiments/summaries.md). A coalition that would turn the step around here must first be trusted, and a
summary that disagrees with this node's direction loses its sender's trust before it is merged
(summaries/trust.py judges first).
"""
from __future__ import annotations

import torch
from torch import Tensor

from swarmnode.summaries.outer import global_norm as norm

Tensors = dict[str, Tensor]
CLIP_RATIO = 2.0  # tau = CLIP_RATIO x |own|: with w_j <= 1 a peer moves g by at most |own|


def dot(a: Tensors, b: Tensors) -> float:
    """sum over every tensor of a . b (the flattened inner product)."""
    return float(sum(torch.dot(a[name].reshape(-1).float(), b[name].reshape(-1).float()) for name in a))


def cosine(a: Tensors, b: Tensors, norm_a: float | None = None, norm_b: float | None = None) -> float:
    """a . b / (|a| |b|), and 0 when either is zero: no evidence either way. Norms already
    known may be passed in (each costs a pass over the tensors)."""
    na = norm(a) if norm_a is None else norm_a
    nb = norm(b) if norm_b is None else norm_b
    return dot(a, b) / (na * nb) if na > 0 and nb > 0 else 0.0


def clip_factor(distance: float, tau: float) -> float:
    """The scale clip(x, tau) applies to an x of norm `distance`: min(1, tau / distance)."""
    return 1.0 if distance <= tau else tau / distance


def robust_merge(own: Tensors, peers: list[tuple[Tensors, float, float]], clip_ratio: float = CLIP_RATIO
                 ) -> tuple[Tensors, list[float]]:
    """The clipped, trust-weighted mean (see the module docstring):

        g = (own + sum_j w_j t_j min(1, tau / |d_j|) d_j) / (1 + sum_j w_j),   tau = clip_ratio |own|

    `peers`: (d_j, w_j, t_j), w_j >= 0, t_j in [0, 1]. Returns g and each peer's clip factor
    min(1, tau / |d_j|) (1: not clipped)."""
    tau = clip_ratio * norm(own)
    total = 1.0 + sum(w for _, w, _ in peers)
    factors = []
    acc = {name: value.clone() for name, value in own.items()}
    for delta, w, t in peers:
        factor = clip_factor(norm(delta), tau)
        factors.append(factor)
        for name in own:
            acc[name].add_(delta[name], alpha=w * t * factor)
    return {name: value / total for name, value in acc.items()}, factors
