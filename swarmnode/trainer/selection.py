"""Which received (external) groups a training step takes: the swarm-sampling policies (pure).

SAPO (arXiv 2509.08721) composes each step of I local and J external rollouts. Policies:

- uniform: the J drawn uniformly from everything peers shared.
- nonzero_advantage: the paper's protocol as its reference code runs it: receivers drop the
  groups whose rewards are all equal (advantage 0 for every sample: no gradient; on a weak
  policy most groups are all-wrong), then draw the J uniformly from the rest.
- fresh_quality (ours): weighted sampling without replacement, weight
      w_i = 1[spread_i > 0] * (1 + tau_i)^(-alpha) * q_i
  with tau_i = max(0, n - v_i) the group's staleness against this node's version n, and q_i
  the sender's quality (Laplace-smoothed share of its groups that passed this node's checks).
  Informative, fresh groups from peers that send good data come first; stale groups and
  groups of sloppy peers still get picked when nothing better is there.
- own_need (ours): fresh_quality's weight times this node's need for the group's task,
      w_i = 1[spread_i > 0] * (1 + tau_i)^(-alpha) * q_i * need(task_i),
      need(t) = max(NEED_FLOOR, 1 - s_t)
  with s_t this node's own success rate on task t (the running mean reward of its own groups,
  `update_success`). A peer's solved group of a task this node mostly fails is worth more than
  one of a task it has mastered ("aha moments propagate" where they are missing).
- balanced (ours, the scheduler's): every sender gets the same share of the draw, whatever its
  speed, and fresher groups come first,
      w_i = 1[spread_i > 0] * (1 + tau_i)^(-alpha) / n_{sender(i)}
  with n_p the number of informative groups sender p has in the pool. A fast node fills the
  pool in proportion to its speed; drawn uniformly, its groups would dominate every step and the
  objective would lean toward its data (Fraboni et al., arXiv 2206.10189: weigh each client by
  its target share over its sampling frequency, here 1 over the sender's share of the pool, so
  in expectation each sender counts equally). A slow node's few groups are then trained about
  as often as a fast node's many, per sender.

Every input is this node's own: rewards re-scored by its verifier, tau counted from its version
when the group arrived (a sender's version counter means nothing here), q from its record of
the sender, s_t from its own rollouts.
"""
from __future__ import annotations

import random
from collections import Counter
from typing import Mapping, Sequence

from swarmnode.trainer.experience import ScoredGroup
from swarmnode.trainer.objectives import staleness_weight

POLICIES = ("uniform", "nonzero_advantage", "fresh_quality", "own_need", "balanced")
NEED_FLOOR = 0.05  # a mastered task's groups still get a place when nothing else is there
SUCCESS_PRIOR = 0.5  # s_t before this node has any group of task t
SUCCESS_DECAY = 0.9  # each own group moves s_t a tenth of the way to its mean reward


def update_success(success: float | None, mean_reward: float, decay: float = SUCCESS_DECAY) -> float:
    """s' = decay * s + (1 - decay) * mean_reward, starting from SUCCESS_PRIOR (s = None)."""
    s = SUCCESS_PRIOR if success is None else success
    return decay * s + (1.0 - decay) * mean_reward


def need(success: float | None) -> float:
    """need(t) = max(NEED_FLOOR, 1 - s_t) (s_t = SUCCESS_PRIOR while unknown)."""
    return max(NEED_FLOOR, 1.0 - (SUCCESS_PRIOR if success is None else success))


def fresh_quality_weights(groups: Sequence[ScoredGroup], version: int, quality: Mapping[str, float],
                          alpha: float = 1.0) -> list[float]:
    """w_i = 1[spread_i > 0] * (1 + tau_i)^(-alpha) * q_i (q of an unknown sender: 0.5)."""
    return [
        (1.0 if g.reward_spread > 0 else 0.0) * staleness_weight(max(0, version - g.policy_version), alpha) * quality.get(g.source, 0.5)
        for g in groups
    ]


def own_need_weights(groups: Sequence[ScoredGroup], version: int, quality: Mapping[str, float],
                     success: Mapping[str, float], alpha: float = 1.0) -> list[float]:
    """w_i = fresh_quality weight_i * need(s_task_i) (see the module doc)."""
    base = fresh_quality_weights(groups, version, quality, alpha)
    return [w * need(success.get(g.ref.task)) for w, g in zip(base, groups)]


def balanced_weights(groups: Sequence[ScoredGroup], version: int, alpha: float = 1.0) -> list[float]:
    """w_i = 1[spread_i > 0] * (1 + tau_i)^(-alpha) / n_{sender(i)}, n_p = informative groups of p here."""
    informative = Counter(g.source for g in groups if g.reward_spread > 0)
    return [
        staleness_weight(max(0, version - g.policy_version), alpha) / informative[g.source] if g.reward_spread > 0 else 0.0
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


def draws_only_informative(policy: str) -> bool:
    """Whether `policy` draws only groups whose rewards differ: every policy but uniform (its
    weight carries 1[spread > 0])."""
    return policy != "uniform"


def drawable(group: ScoredGroup, policy: str) -> bool:
    """Whether `policy` can ever draw `group`: uniform any group; every other policy only a
    group whose rewards differ."""
    return not draws_only_informative(policy) or group.reward_spread > 0


def select_external(groups: Sequence[ScoredGroup], k: int, policy: str, version: int,
                    quality: Mapping[str, float], rng: random.Random,
                    success: Mapping[str, float] | None = None) -> list[int]:
    """Indices of the (at most k) groups a step takes from `groups` under `policy`."""
    if k <= 0 or not groups:
        return []
    if policy == "uniform":
        return rng.sample(range(len(groups)), min(k, len(groups)))
    if policy == "nonzero_advantage":
        informative = [i for i, g in enumerate(groups) if drawable(g, policy)]
        return rng.sample(informative, min(k, len(informative)))
    if policy == "fresh_quality":
        weights = fresh_quality_weights(groups, version, quality)
        return [i for i in weighted_sample(weights, k, rng) if weights[i] > 0]
    if policy == "balanced":
        weights = balanced_weights(groups, version)
        return [i for i in weighted_sample(weights, k, rng) if weights[i] > 0]
    if policy == "own_need":
        weights = own_need_weights(groups, version, quality, success or {})
        return [i for i in weighted_sample(weights, k, rng) if weights[i] > 0]
    raise ValueError(f"unknown external selection policy {policy!r} (one of {', '.join(POLICIES)})")
