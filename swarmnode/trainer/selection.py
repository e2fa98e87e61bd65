"""Which received (external) groups a training step takes: the swarm-sampling policies (pure).

SAPO (arXiv 2509.08721) composes each step of I local and J external rollouts, the J drawn
uniformly from what the swarm shared. Two more policies:

- nonzero_advantage: uniform over the groups whose rewards differ. A group whose completions
  all got the same reward has advantage 0 for every sample and adds no gradient; on a weak
  policy most groups are all-wrong, so uniform sampling wastes most of J.
- fresh_quality (ours): weighted sampling without replacement, weight
      w_i = 1[spread_i > 0] * (1 + tau_i)^(-alpha) * q_i
  with tau_i = max(0, n - v_i) the group's staleness against this node's version n, and q_i
  the sender's quality (Laplace-smoothed share of its groups that passed this node's checks).
  Informative, fresh groups from peers that send good data come first; stale groups and
  groups of sloppy peers still get picked when nothing better is there.
"""
from __future__ import annotations

import random
from typing import Mapping, Sequence

from swarmnode.trainer.experience import ScoredGroup
from swarmnode.trainer.objectives import staleness_weight

POLICIES = ("uniform", "nonzero_advantage", "fresh_quality")


def fresh_quality_weights(groups: Sequence[ScoredGroup], version: int, quality: Mapping[str, float],
                          alpha: float = 1.0) -> list[float]:
    """w_i = 1[spread_i > 0] * (1 + tau_i)^(-alpha) * q_i (q of an unknown sender: 0.5)."""
    return [
        (1.0 if g.reward_spread > 0 else 0.0) * staleness_weight(max(0, version - g.policy_version), alpha) * quality.get(g.source, 0.5)
        for g in groups
    ]


def weighted_sample(weights: Sequence[float], k: int, rng: random.Random) -> list[int]:
    """k indices without replacement, P proportional to weight (Efraimidis-Spirakis keys u^(1/w));
    zero-weight items only after every positive one."""
    keys = []
    for i, w in enumerate(weights):
        u = rng.random()
        keys.append((1, u ** (1.0 / w)) if w > 0 else (0, u))
    order = sorted(range(len(weights)), key=lambda i: keys[i], reverse=True)
    return order[:k]


def select_external(groups: Sequence[ScoredGroup], k: int, policy: str, version: int,
                    quality: Mapping[str, float], rng: random.Random) -> list[int]:
    """Indices of the (at most k) groups a step takes from `groups` under `policy`."""
    if k <= 0 or not groups:
        return []
    if policy == "uniform":
        return rng.sample(range(len(groups)), min(k, len(groups)))
    if policy == "nonzero_advantage":
        informative = [i for i, g in enumerate(groups) if g.reward_spread > 0]
        return rng.sample(informative, min(k, len(informative)))
    if policy == "fresh_quality":
        weights = fresh_quality_weights(groups, version, quality)
        return [i for i in weighted_sample(weights, k, rng) if weights[i] > 0]
    raise ValueError(f"unknown external selection policy {policy!r} (one of {', '.join(POLICIES)})")
