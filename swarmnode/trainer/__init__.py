"""The node's RL trainer: GRPO-style group advantages and AReaL's decoupled PPO objective
for learning from rollouts of a (possibly stale) behavior policy.

Groups (every ScoredGroup, this node's own and peers', is made in one place):
- experience.py: `ScoredGroup`, one prompt's completions with this node's rewards;
  `scored_group`, the one way a group is made and scored by the task's verifier;
  `score_generation` (this node's generations); `TrainBatch` and `collate` (groups -> tensors).
- intake.py: `RolloutIntake`, a peer's RolloutBatch checked (task ref, prompt, lengths, model)
  and re-scored into external ScoredGroups through `scored_group`; `IntakeResult`.
- rollout_export.py: `groups_to_batch`, this node's groups as one RolloutBatch for peers.
- buffer.py: `ExperienceBuffer` between generation and training, with the staleness bounds;
  selection.py: which peers' groups a step takes (the swarm-sampling policies).

Training:
- objectives.py: group advantages, the decoupled PPO loss, KL, staleness weights (pure math).
- forward.py: the forward pass over a TrainBatch (log-probs of completion tokens, chunking).
- trainer.py: `Trainer`, one optimizer step on a batch of groups.
- generator_worker.py: the interfaces between the step loop and the generator beside it, one
  each way: `GeneratorWorker` (start, publish weights, batch size, stop) and `BatchSink` (waits,
  batches with their `BatchStats`, the end).
- loop.py: `RolloutConfig`, `prompt_stream`, `Quotas`; generation and training in turn
  (`run_sync`) or at once: `StepLoop`, the one step loop, over any GeneratorWorker;
  `GeneratorThread`, the generator on a thread; `AsyncRunner`, the step loop with one.
- process_loop.py: `GeneratorProcess`, the generator in a child process (weights through
  shared tensors); `ProcessAsyncRunner`, the step loop with one.
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
