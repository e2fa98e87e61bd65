"""Scored rollout groups and how a batch of them becomes training tensors (pure)."""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from swarmnode.policy.generation import PromptGeneration
from swarmnode.tasks import TaskItem, extract_answer, get_task
from swarmnode.tasks.base import TaskRef

LOCAL = "local"


@dataclass
class ScoredGroup:
    """One prompt's completions with the rewards this node's own verifier gave them.

    `source` is LOCAL or the peer id of the node that generated it; `policy_version` is the
    behaviour policy's version, for the staleness bound. `behavior_logprobs` is None for a
    peer's group sampled by another model: the trainer then takes the current policy's own
    log-probs as behaviour (importance weight 1), i.e. re-scores the text under its policy.
    """

    ref: TaskRef
    prompt_token_ids: list[int]
    completion_token_ids: list[list[int]]
    behavior_logprobs: list[list[float]] | None
    rewards: list[float]
    policy_version: int
    source: str = LOCAL
    texts: list[str] = field(default_factory=list)
    prompt: str = ""  # the task question (what travels; each node applies its own chat template)

    @property
    def size(self) -> int:
        return len(self.rewards)

    @property
    def is_local(self) -> bool:
        return self.source == LOCAL

    @property
    def reward_spread(self) -> float:
        """max - min reward: 0 means zero advantage for every sample (no gradient)."""
        return max(self.rewards) - min(self.rewards) if self.rewards else 0.0


def score_generation(item: TaskItem, generation: PromptGeneration, source: str = LOCAL) -> ScoredGroup:
    """Score every completion of `generation` with the task's verifier (never a reported reward)."""
    task = get_task(item.ref.task)
    return ScoredGroup(
        ref=item.ref,
        prompt_token_ids=list(generation.prompt_token_ids),
        completion_token_ids=[list(c.token_ids) for c in generation.completions],
        behavior_logprobs=[list(c.logprobs) for c in generation.completions],
        rewards=[task.score(item, extract_answer(c.text)) for c in generation.completions],
        policy_version=generation.policy_version,
        source=source,
        texts=[c.text for c in generation.completions],
        prompt=item.question,
    )


@dataclass
class TrainBatch:
    """Right-padded sequences prompt + completion; per-target-position tensors are [B, L-1]."""

    input_ids: torch.Tensor  # [B, L]
    attention_mask: torch.Tensor  # [B, L]
    completion_mask: torch.Tensor  # [B, L-1], 1 where the target token is a completion token
    behavior_logp: torch.Tensor  # [B, L-1], behaviour log-prob of each target completion token
    rewards: torch.Tensor  # [B]
    group_ids: torch.Tensor  # [B], index of the sample's group in the batch
    versions: torch.Tensor  # [B], behaviour policy version
    behavior_known: torch.Tensor  # [B] bool; False: no behaviour log-probs (another model sampled it)
    external: torch.Tensor  # [B] bool; True: the sample came from a peer

    @property
    def num_completion_tokens(self) -> int:
        return int(self.completion_mask.sum())

    def select(self, rows: torch.Tensor) -> "TrainBatch":
        """The batch restricted to `rows` (bool [B]), trimmed to its longest remaining sequence."""
        width = max(1, int(self.attention_mask[rows].sum(dim=1).max()))
        return TrainBatch(
            input_ids=self.input_ids[rows, :width],
            attention_mask=self.attention_mask[rows, :width],
            completion_mask=self.completion_mask[rows, : width - 1],
            behavior_logp=self.behavior_logp[rows, : width - 1],
            rewards=self.rewards[rows],
            group_ids=self.group_ids[rows],
            versions=self.versions[rows],
            behavior_known=self.behavior_known[rows],
            external=self.external[rows],
        )


def collate(groups: list[ScoredGroup], pad_id: int) -> TrainBatch:
    """Stack every completion of every group into one right-padded batch.

    Target position t predicts token t+1, so completion token j of a sequence whose prompt has
    P tokens sits at target position P - 1 + j.
    """
    rows = [(g, i) for g in groups for i in range(g.size)]
    width = max(len(g.prompt_token_ids) + len(g.completion_token_ids[i]) for g, i in rows)
    batch = len(rows)
    input_ids = torch.full((batch, width), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((batch, width), dtype=torch.long)
    completion_mask = torch.zeros((batch, width - 1), dtype=torch.float32)
    behavior_logp = torch.zeros((batch, width - 1), dtype=torch.float32)
    group_of = {id(g): k for k, g in enumerate(groups)}
    for row, (g, i) in enumerate(rows):
        prompt, completion = g.prompt_token_ids, g.completion_token_ids[i]
        seq = prompt + completion
        input_ids[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
        attention_mask[row, : len(seq)] = 1
        start = len(prompt) - 1
        completion_mask[row, start: start + len(completion)] = 1.0
        if g.behavior_logprobs is not None:
            behavior_logp[row, start: start + len(completion)] = torch.tensor(g.behavior_logprobs[i], dtype=torch.float32)
    return TrainBatch(
        input_ids=input_ids,
        attention_mask=attention_mask,
        completion_mask=completion_mask,
        behavior_logp=behavior_logp,
        rewards=torch.tensor([g.rewards[i] for g, i in rows], dtype=torch.float32),
        group_ids=torch.tensor([group_of[id(g)] for g, _ in rows], dtype=torch.long),
        versions=torch.tensor([g.policy_version for g, _ in rows], dtype=torch.long),
        behavior_known=torch.tensor([g.behavior_logprobs is not None for g, _ in rows], dtype=torch.bool),
        external=torch.tensor([not g.is_local for g, _ in rows], dtype=torch.bool),
    )
