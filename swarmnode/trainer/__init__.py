"""The node's RL trainer: GRPO-style group advantages and AReaL's decoupled PPO objective
for learning from rollouts of a (possibly stale) behavior policy.

Groups (every ScoredGroup, this node's own and peers', is made in one place):
- experience.py: `ScoredGroup`, one prompt's completions with this node's rewards;
  `scored_group`, the one way a group is made and scored by the task's verifier;
  `score_generation` (this node's generations); `TrainBatch` and `collate` (groups -> tensors).
- intake.py: `RolloutIntake`, a peer's RolloutBatch checked (task ref, prompt, lengths, model)
  and re-scored into external ScoredGroups through `scored_group`; `IntakeResult`.
- wire.py: `groups_to_batch`, this node's groups as one RolloutBatch for peers.
- buffer.py: `ExperienceBuffer` between generation and training, with the staleness bounds;
  selection.py: which peers' groups a step takes (the swarm-sampling policies).

Training:
- objectives.py: group advantages, the decoupled PPO loss, KL, staleness weights (pure math).
- forward.py: the forward pass over a TrainBatch (log-probs of completion tokens, chunking).
- trainer.py: `Trainer`, one optimizer step on a batch of groups.
- loop.py: generation and training in turn or at once in threads (`AsyncRunner`);
  process_loop.py: the same with the generator in its own process (`ProcessAsyncRunner`).
- evaluate.py: held-out greedy accuracy; bench.py: `swarmnode bench async`.
"""
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
