"""The outer step: merge this node's pseudo-gradient with peers' summaries, then move the anchor.

DiLoCo / NoLoCo without a barrier: every H local steps the node takes its own
pseudo-gradient (anchor - weights, dense) and the freshest summaries of a few peers (sparse,
decoded), weights each peer's by its staleness on this node's own clock and by how often its
summaries were merged lately (a fast sender does not dominate), averages, and applies
an outer SGD step with momentum to the anchor. The weights then restart from the new anchor.
"""
from __future__ import annotations

import math
import statistics
from typing import Mapping

import torch
from torch import Tensor

from swarmnode.trainer.objectives import staleness_weight

Tensors = dict[str, Tensor]


def pseudo_gradient(anchor: Tensors, weights: Tensors) -> Tensors:
    """delta = anchor - weights: the descent direction of the last H local steps (DiLoCo's sign)."""
    return {name: anchor[name] - weights[name].detach().to(anchor[name].dtype) for name in anchor}


def peer_weights(ages: list[int], a: float, corrections: list[float] | None = None) -> list[float]:
    """Each peer summary's weight, w_j = (1 + tau_j)^-a * c_j, tau_j = this node's outer steps
    since it arrived, c_j the sender's frequency correction (1 when not given)."""
    corrections = corrections or [1.0] * len(ages)
    return [float(staleness_weight(tau, a)) * c for tau, c in zip(ages, corrections, strict=True)]


def frequency_corrections(merged: Mapping[str, int], peers: list[str]) -> list[float]:
    """How much each of `peers` counts, by how often its summaries were merged lately:

        c_j = min(1, median_p n_p / n_j)

    n_p: the merges of sender p's summaries over this node's recent outer steps (this step's
    included). A fast node publishes, and is merged, more often; over many outer steps its
    direction would dominate the anchor. Fraboni et al. (arXiv 2206.10189) weigh each client by
    its target share over its sampling frequency; here only the senders merged more often than
    the median one are weighed down, never a rare one up: a peer that publishes seldom must not
    buy a larger weight by it."""
    counts = [n for n in merged.values() if n > 0]
    if not counts:
        return [1.0] * len(peers)
    median = statistics.median(counts)
    return [min(1.0, median / merged[p]) if merged.get(p, 0) > 0 else 1.0 for p in peers]


def merge_pseudo_gradients(own: Tensors, peers: list[tuple[Tensors, float]]) -> Tensors:
    """Weighted mean of this node's pseudo-gradient (weight 1) and peers' (weight w_j):

        g = (own + sum_j w_j d_j) / (1 + sum_j w_j)

    A peer's d_j is sparse (its summary): the part it did not send arrives, through its error
    feedback, in a later summary."""
    total = 1.0 + sum(w for _, w in peers)
    merged = {}
    for name, value in own.items():
        acc = value.clone()
        for delta, w in peers:
            acc.add_(delta[name], alpha=w)
        merged[name] = acc / total
    return merged


def outer_update(anchor: Tensor, momentum: Tensor, g: Tensor, *, lr: float, mu: float,
                 nesterov: bool) -> tuple[Tensor, Tensor]:
    """SGD with momentum on the pseudo-gradient g (in place; returns anchor', momentum'):

        m'      = mu m + g
        step    = g + mu m'   (Nesterov)   or   m'   (heavy ball)
        anchor' = anchor - lr step

    With lr = 1 and mu = 0 the anchor lands on anchor - g: the node's own weights when g is
    its own pseudo-gradient alone."""
    momentum.mul_(mu).add_(g)
    step = g + mu * momentum if nesterov else momentum
    anchor.sub_(step, alpha=lr)
    return anchor, momentum


def global_norm(tensors: Tensors) -> float:
    """sqrt(sum of squares) over every tensor (inf or nan when any value is)."""
    if not tensors:
        return 0.0
    flat = (t.reshape(-1).float() for t in tensors.values())
    return math.sqrt(sum(float(torch.dot(f, f)) for f in flat))  # no squared copy of the tensors
