"""One optimizer step of the decoupled-PPO GRPO trainer on a batch of scored groups.

A batch runs through the model in micro-batches of rows sized to the device's memory
(forward.micro_batches), their gradients accumulated: each micro-batch's loss is weighted by
its share of the batch's tokens, so the sum is the one-shot token-level mean exactly
(tests/unit/trainer/test_trainer.py compares the gradients).
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field

import torch

from swarmnode.policy.attention import attention_backends
from swarmnode.policy.precision import use_fp32_logits
from swarmnode.trainer.experience import ScoredGroup, collate
from swarmnode.trainer.forward import (
    completion_logprobs,
    micro_batch_budget,
    micro_batches,
    resolve_chunking,
    row_lengths,
)
from swarmnode.trainer.objectives import (
    decoupled_ppo_loss,
    external_sample_mask,
    group_advantages,
    mean_logprob_gap,
    nonzero_advantage_groups,
    sender_mean,
    truncate_behavior_logp,
)


@dataclass(frozen=True)
class TrainerConfig:
    lr: float = 1e-4
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    eps_low: float = 0.2
    eps_high: float = 0.28
    temperature: float = 1.0  # must equal the sampling temperature (log-probs are tempered)
    scale_advantages_by_std: bool = True
    behavior_weight_cap: float | None = 5.0
    kl_coef: float = 0.0  # > 0 keeps a frozen copy of the initial policy as the KL reference
    # Learn from peers' successes only: a peer's samples with negative advantage leave the
    # objective (their group still sets the baseline). See external_sample_mask.
    external_positive_only: bool = False
    # A peer whose samples' log-probs sit, pooled over this step, more than this (nats/token)
    # below this policy's has its samples dropped as implausible (a weight-inflation attack)
    # and is reported.
    external_max_logprob_gap: float = 1.0
    # Padded positions per forward + backward; None: sized from the device's free memory
    # (forward.micro_batch_budget). Larger batches are cut into micro-batches.
    micro_batch_tokens: int | None = None
    forward_chunking: str = "auto"  # auto | length | single | plain (see trainer.forward)
    # A bf16 / fp16 model's output layer runs in float32 (policy.precision.use_fp32_logits);
    # set it on the generator too: the two must agree on log-probs.
    fp32_logits: bool = False
    cudnn_attention: bool = False  # see policy.attention.attention_backends
    # Another model's text (no behaviour log-probs): "plain" re-scores it as if this policy
    # had sampled it (weight 1); "shaped" uses objectives.shaped_objective (LUFFY), at most a
    # quarter of an own sample's weight per token.
    foreign_text_objective: str = "plain"
    foreign_shaping_gamma: float = 0.1


@dataclass
class StepResult:
    version: int  # policy version after the step
    trained: bool  # False when every group had zero advantage (no gradient)
    loss: float
    reward_mean: float
    groups: int
    groups_used: int
    completion_tokens: int
    seconds: float
    stats: dict[str, float]
    local_reward_mean: float | None = None  # mean reward of this node's own groups (SAPO's measure)
    local_groups: int = 0
    external_groups: int = 0
    implausible: dict[str, int] = field(default_factory=dict)  # sender -> samples dropped as implausible
    pause_seconds: float = 0.0  # slept after the step for training.slowdown (filled in by the runner)


class Trainer:
    def __init__(self, model, pad_id: int, config: TrainerConfig, version: int = 0):
        self.model = model.eval()
        self.device = next(model.parameters()).device
        self.pad_id = pad_id
        self.config = config
        self.version = version
        self.chunking = resolve_chunking(config.forward_chunking, self.device)
        if config.micro_batch_tokens is not None and config.micro_batch_tokens < 1:
            raise ValueError(f"training.micro_batch_tokens must be >= 1, got {config.micro_batch_tokens}")
        if config.fp32_logits:
            use_fp32_logits(self.model)
        # fused: one kernel over all parameters instead of a dozen small ops per tensor, which on
        # a small model is a visible share of the step (CPU since torch 2.4, and GPU).
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay, fused=True)
        self.reference = None
        if config.kl_coef > 0:
            self.reference = copy.deepcopy(model).eval().requires_grad_(False)

    def resumed_at(self, version: int) -> None:
        """The model and optimizer were just loaded from a checkpoint of policy `version`."""
        self.version = version

    def _logp(self, model, batch) -> torch.Tensor:
        return completion_logprobs(model, batch, self.config.temperature, chunking=self.chunking)

    def micro_batches(self, batch) -> list[torch.Tensor]:
        """Bool row masks [B], one per micro-batch (one mask of all rows when the batch fits)."""
        budget = self.config.micro_batch_tokens or micro_batch_budget(self.model, self.device)
        lengths = row_lengths(batch)
        if len(lengths) * max(lengths) <= budget:
            return [torch.ones(len(lengths), dtype=torch.bool, device=self.device)]
        masks = []
        for rows in micro_batches(lengths, budget):
            mask = torch.zeros(len(lengths), dtype=torch.bool, device=self.device)
            mask[rows] = True
            masks.append(mask)
        return masks

    def step(self, groups: list[ScoredGroup]) -> StepResult:
        """Advantages per group, drop zero-advantage groups, one AdamW step. Bumps the version."""
        with attention_backends(self.device, self.config.cudnn_attention):
            return self._step(groups)

    def _step(self, groups: list[ScoredGroup]) -> StepResult:
        start = time.perf_counter()
        reward_mean = sum(sum(g.rewards) for g in groups) / max(1, sum(g.size for g in groups))
        local = [g for g in groups if g.is_local]
        mix = dict(
            local_reward_mean=sum(sum(g.rewards) for g in local) / sum(g.size for g in local) if local else None,
            local_groups=len(local), external_groups=len(groups) - len(local),
        )
        batch = collate(groups, self.pad_id)
        keep = nonzero_advantage_groups(batch.rewards, batch.group_ids)
        kept_groups = torch.unique(batch.group_ids[keep])  # select() renumbers groups 0.. in this order
        used = len(kept_groups)
        if not bool(keep.any()):
            return StepResult(self.version, False, 0.0, reward_mean, len(groups), 0, 0, time.perf_counter() - start, {}, **mix)
        # Groups whose rewards are all equal have zero advantage: they add nothing to the loss
        # (their tokens are outside the token-level mean) but would cost a forward and backward
        # pass, so they leave the batch before the model sees it.
        batch = batch.select(keep).to(self.device)
        advantages = group_advantages(batch.rewards, batch.group_ids, scale_by_std=self.config.scale_advantages_by_std)
        mask = batch.completion_mask
        if self.config.external_positive_only:
            mask = mask * external_sample_mask(advantages, batch.external)[:, None]
        parts = self.micro_batches(batch)
        # The model stays in eval mode: dropout (GPT-2 has it) would make the trainer's
        # log-probs noisy against the generator's, which never drops units.
        whole = self._logp(self.model, batch) if len(parts) == 1 else None
        row_sources = [groups[int(kept_groups[g])].source for g in batch.group_ids.tolist()]
        # Judged over all of a sender's samples: over its above-baseline ones alone (the mask of
        # external_positive_only), a policy that finds right answers likelier than the sender did
        # sits above 0, and honest peers were dropped as implausible.
        implausible = self._implausible_rows(row_sources, batch, whole, parts, batch.completion_mask)
        mask = mask * (~implausible).to(mask.dtype)[:, None]
        self.optimizer.zero_grad(set_to_none=True)
        loss, stats = self._accumulate(batch, parts, whole, advantages, mask)
        stats["grad_norm"] = float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.max_grad_norm))
        stats["micro_batches"] = float(len(parts))
        self.optimizer.step()
        self.version += 1
        senders: dict[str, int] = {}
        for row in implausible.nonzero().flatten().tolist():
            senders[row_sources[row]] = senders.get(row_sources[row], 0) + 1
        return StepResult(
            self.version, True, loss, reward_mean, len(groups), used,
            batch.num_completion_tokens, time.perf_counter() - start, stats, **mix, implausible=senders,
        )

    def _accumulate(self, batch, parts, whole, advantages, mask) -> tuple[float, dict[str, float]]:
        """Backward over each micro-batch, its loss weighted by its share of the batch's tokens:

            loss = sum_k (n_k / N) * loss_k,   loss_k the token-level mean over micro-batch k's n_k tokens

        which is the token-level mean over all N tokens (the stats are combined the same way).
        `whole` is the log-probs of the whole batch when it is one micro-batch (already run).
        One update per batch: the proximal policy is the current one before the step.
        """
        total_tokens = mask.sum().clamp(min=1.0)
        loss_sum, stats_sum = 0.0, {}
        for rows in parts:
            part = batch if whole is not None else batch.select(rows)
            logp = whole if whole is not None else self._logp(self.model, part)
            width = logp.shape[1]
            proximal = logp.detach()
            # Text sampled by another model has no behaviour log-probs under this policy: it is
            # re-scored here, the current policy standing in as behaviour (weight 1, no correction).
            behavior_logp = torch.where(part.behavior_known[:, None], part.behavior_logp, proximal)
            behavior_logp = truncate_behavior_logp(behavior_logp, proximal, part.external)
            ref_logp = None
            if self.reference is not None:
                with torch.no_grad():
                    ref_logp = self._logp(self.reference, part)
            part_mask = mask[rows, :width]
            loss, stats = decoupled_ppo_loss(
                logp, proximal, behavior_logp, advantages[rows], part_mask,
                eps_low=self.config.eps_low, eps_high=self.config.eps_high,
                behavior_weight_cap=self.config.behavior_weight_cap, ref_logp=ref_logp, kl_coef=self.config.kl_coef,
                shaped_rows=~part.behavior_known if self.config.foreign_text_objective == "shaped" else None,
                shaping_gamma=self.config.foreign_shaping_gamma,
            )
            share = part_mask.sum() / total_tokens
            (loss * share).backward()
            share = float(share)
            loss_sum += float(loss.detach()) * share
            for name, value in stats.items():
                stats_sum[name] = stats_sum.get(name, 0.0) + value * share
        return loss_sum, stats_sum

    def _implausible_rows(self, row_sources: list[str], batch, whole, parts, mask) -> torch.Tensor:
        """Bool [B]: peers' rows whose sender's pooled log-prob gap is over the config's bound.

        The gap is pooled over the whole batch, so a batch cut into micro-batches first runs
        them all without grad for this policy's log-probs (only when peers' rows are in it).
        """
        external = batch.external
        if not bool(external.any()):
            return external
        if whole is not None:
            logp = whole.detach()
        else:
            logp = torch.zeros_like(batch.behavior_logp)
            with torch.no_grad():
                for rows in parts:
                    part = self._logp(self.model, batch.select(rows))
                    logp[rows, : part.shape[1]] = part
        behavior_logp = torch.where(batch.behavior_known[:, None], batch.behavior_logp, logp)
        index: dict[str, int] = {}
        sender_ids = torch.tensor([index.setdefault(s, len(index)) for s in row_sources], device=logp.device)
        pooled = sender_mean(mean_logprob_gap(logp, behavior_logp, mask), mask.sum(-1), sender_ids)
        return external & (pooled > self.config.external_max_logprob_gap)

    def weights(self) -> dict[str, torch.Tensor]:
        """A detached copy of the weights, for the generator (weight sync)."""
        return {k: v.detach().clone() for k, v in self.model.state_dict().items()}
