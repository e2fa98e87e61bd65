"""Scored rollout groups and how a batch of them becomes training tensors (pure).

Every ScoredGroup, this node's own and peers' (trainer/intake.py), is made by `scored_group`:
one verifier scores them all."""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from swarmnode.policy.generation import PromptGeneration
from swarmnode.policy.prompts import left_pad
from swarmnode.tasks import Task, TaskItem, extract_answer, get_task
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


def scored_group(task: Task, item: TaskItem, *, prompt_token_ids: list[int], completion_token_ids: list[list[int]],
                 behavior_logprobs: list[list[float]] | None, texts: list[str], policy_version: int,
                 source: str) -> ScoredGroup:
    """`item`'s completions with the rewards `task`'s verifier gives their texts (never a reported reward)."""
    return ScoredGroup(
        ref=item.ref,
        prompt_token_ids=prompt_token_ids,
        completion_token_ids=completion_token_ids,
        behavior_logprobs=behavior_logprobs,
        rewards=[task.score(item, extract_answer(text)) for text in texts],
        policy_version=policy_version,
        source=source,
        texts=texts,
        prompt=item.question,
    )


def score_generation(item: TaskItem, generation: PromptGeneration, source: str = LOCAL) -> ScoredGroup:
    """This node's generation for `item` as a ScoredGroup."""
    return scored_group(
        get_task(item.ref.task), item,
        prompt_token_ids=list(generation.prompt_token_ids),
        completion_token_ids=[list(c.token_ids) for c in generation.completions],
        behavior_logprobs=[list(c.logprobs) for c in generation.completions],
        texts=[c.text for c in generation.completions],
        policy_version=generation.policy_version,
        source=source,
    )


@dataclass
class TrainBatch:
    """A batch of groups as the trainer's forward pass takes it: each prompt once.

    Prompts are left-padded, [G, P], so that every prompt ends in the last column; the
    completions are rows, right-padded, [B, C]; row b belongs to group group_ids[b]. Completion
    token j of a row is predicted from its prompt's last position (j = 0) or from completion
    position j - 1. Per-token tensors (completion_mask, behavior_logp, and the trainer's
    log-probs) are [B, C].
    """

    prompt_ids: torch.Tensor  # [G, P]
    prompt_mask: torch.Tensor  # [G, P]
    completion_ids: torch.Tensor  # [B, C]
    completion_mask: torch.Tensor  # [B, C], 1.0 on completion tokens, 0.0 on padding
    behavior_logp: torch.Tensor  # [B, C], behaviour log-prob of each completion token
    rewards: torch.Tensor  # [B]
    group_ids: torch.Tensor  # [B], the row's group: its prompt's row in prompt_ids
    versions: torch.Tensor  # [B], behaviour policy version
    behavior_known: torch.Tensor  # [B] bool; False: no behaviour log-probs (another model sampled it)
    external: torch.Tensor  # [B] bool; True: the sample came from a peer

    @property
    def num_completion_tokens(self) -> int:
        return int(self.completion_mask.sum())

    @property
    def completion_lengths(self) -> torch.Tensor:
        return self.completion_mask.sum(dim=1).long()

    def to(self, device) -> "TrainBatch":
        return TrainBatch(**{name: value.to(device) for name, value in vars(self).items()})

    def select(self, rows: torch.Tensor) -> "TrainBatch":
        """The batch restricted to `rows` (bool [B]) and their groups, trimmed to the longest left."""
        kept_groups, group_ids = torch.unique(self.group_ids[rows], return_inverse=True)
        prompt_mask = self.prompt_mask[kept_groups]
        prompt_width = max(1, int(prompt_mask.sum(dim=1).max()))
        completion_width = max(1, int(self.completion_lengths[rows].max()))
        return TrainBatch(
            prompt_ids=self.prompt_ids[kept_groups, -prompt_width:],
            prompt_mask=prompt_mask[:, -prompt_width:],
            completion_ids=self.completion_ids[rows, :completion_width],
            completion_mask=self.completion_mask[rows, :completion_width],
            behavior_logp=self.behavior_logp[rows, :completion_width],
            rewards=self.rewards[rows],
            group_ids=group_ids,
            versions=self.versions[rows],
            behavior_known=self.behavior_known[rows],
            external=self.external[rows],
        )


def _right_padded(rows: list[list], width: int, fill) -> list[list]:
    return [r + [fill] * (width - len(r)) for r in rows]


def collate(groups: list[ScoredGroup], pad_id: int) -> TrainBatch:
    """Each group's prompt once (left-padded) and every completion as a row (right-padded)."""
    # Built as padded Python lists and turned into tensors once (as left_pad does): a tensor per
    # row would cost more than the model's forward pass on a small policy.
    prompt_ids, prompt_mask = left_pad([g.prompt_token_ids for g in groups], pad_id)
    rows = [(k, g, i) for k, g in enumerate(groups) for i in range(g.size)]
    completions = [list(g.completion_token_ids[i]) for _, g, i in rows]
    width = max(1, max(len(c) for c in completions))
    behavior = [list(g.behavior_logprobs[i]) if g.behavior_logprobs is not None else [0.0] * len(g.completion_token_ids[i])
                for _, g, i in rows]
    return TrainBatch(
        prompt_ids=prompt_ids,
        prompt_mask=prompt_mask,
        completion_ids=torch.tensor(_right_padded(completions, width, pad_id), dtype=torch.long),
        completion_mask=torch.tensor(_right_padded([[1.0] * len(c) for c in completions], width, 0.0), dtype=torch.float32),
        behavior_logp=torch.tensor(_right_padded(behavior, width, 0.0), dtype=torch.float32),
        rewards=torch.tensor([g.rewards[i] for _, g, i in rows], dtype=torch.float32),
        group_ids=torch.tensor([k for k, _, _ in rows], dtype=torch.long),
        versions=torch.tensor([g.policy_version for _, g, _ in rows], dtype=torch.long),
        behavior_known=torch.tensor([g.behavior_logprobs is not None for _, g, _ in rows], dtype=torch.bool),
        external=torch.tensor([not g.is_local for _, g, _ in rows], dtype=torch.bool),
    )
