"""The node's RL trainer: GRPO-style group advantages and AReaL's decoupled PPO objective
for learning from rollouts of a (possibly stale) behavior policy. See `objectives`."""
from swarmnode.trainer.objectives import (
    decoupled_ppo_loss,
    group_advantages,
    k3_kl,
    nonzero_advantage_groups,
    staleness_mask,
    staleness_weight,
    token_logprobs,
)

__all__ = [
    "decoupled_ppo_loss",
    "group_advantages",
    "k3_kl",
    "nonzero_advantage_groups",
    "staleness_mask",
    "staleness_weight",
    "token_logprobs",
]
