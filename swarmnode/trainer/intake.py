"""A peer's RolloutBatch checked, re-scored and turned into external ScoredGroups for the
experience buffer (pure: no I/O), by the same `scored_group` as this node's own groups.

A receiver trusts nothing a peer says about quality: it regenerates every task item from its
(task, seed, index), requires the prompt to be that item's question, and scores every
completion with its own verifier. A peer with the same model fingerprint, the same initial
weights (base fingerprint) and sampling temperature shares token ids and, near enough, this
node's probabilities, so its per-token log-probs serve as behaviour log-probs. For any other
model only the text counts: it is re-tokenised here and re-scored under this node's policy by
the trainer (behaviour log-probs None). A fine-tune of the same architecture is "another
model": its log-probs sit far from this node's, and using them would drop (and blame) an
honest peer as implausible.

Lengths are this node's own: a completion longer than it would generate itself (its
max_new_tokens; for another model's text, that times a re-tokenisation allowance) is rejected,
never truncated into training. Versions too: a peer's policy version counter means nothing
here, so every received group is stamped with this node's version at receipt, and staleness
bounds count this node's steps since then.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from swarmnode.policy.prompts import format_prompt
from swarmnode.protocol.codec import RejectReason
from swarmnode.protocol.generated import rollout_batch_pb2
from swarmnode.tasks import Task, get_task
from swarmnode.trainer.experience import ScoredGroup, scored_group


@dataclass
class IntakeResult:
    groups: list[ScoredGroup] = field(default_factory=list)
    rejected: list[tuple[RejectReason, str]] = field(default_factory=list)  # (reason, detail) per group
    # Groups of a task this node does not train: an honest peer may train others, so they are
    # skipped and counted, never held against the sender.
    skipped_other_task: int = 0
    same_model: bool = False


class RolloutIntake:
    """Turns a verified peer batch into external ScoredGroups for this node (see module doc)."""

    def __init__(self, tokenizer, *, model_fingerprint: str, tasks: list[str], temperature: float,
                 max_completion_tokens: int, max_foreign_completion_tokens: int, base_fingerprint: str = ""):
        self.tokenizer = tokenizer
        self.model_fingerprint = model_fingerprint
        self.base_fingerprint = base_fingerprint
        self.temperature = temperature
        self.max_completion_tokens = max_completion_tokens
        self.max_foreign_completion_tokens = max_foreign_completion_tokens
        self.vocab_size = len(tokenizer)
        # No token spans more characters than its longest vocabulary entry, so a text longer
        # than max_foreign_completion_tokens times that is too long without tokenising it.
        self._max_token_chars = max(1, max(len(token) for token in tokenizer.get_vocab()))
        eos = tokenizer.eos_token_id
        self.eos_ids = {eos} if isinstance(eos, int) else set(eos)
        self._tasks: dict[str, Task] = {name: get_task(name) for name in tasks}
        self._prompt_ids: dict[str, list[int]] = {}

    def prompt_ids(self, question: str) -> list[int]:
        ids = self._prompt_ids.get(question)
        if ids is None:
            ids = self.tokenizer(format_prompt(self.tokenizer, question), add_special_tokens=False)["input_ids"]
            if len(self._prompt_ids) > 50_000:
                self._prompt_ids.clear()
            self._prompt_ids[question] = ids
        return ids

    def same_model(self, batch: rollout_batch_pb2.RolloutBatch) -> bool:
        # The wire's temperature is a float32: compare at float32 precision.
        return (batch.model_fingerprint == self.model_fingerprint and batch.base_fingerprint == self.base_fingerprint
                and math.isclose(batch.temperature, self.temperature, rel_tol=1e-6))

    def accept(self, batch: rollout_batch_pb2.RolloutBatch, sender: str, current_version: int) -> IntakeResult:
        """Checked, re-scored external groups of `batch`, and a (reason, detail) per rejected group."""
        result = IntakeResult(same_model=self.same_model(batch))
        for wire in batch.groups:
            task = self._tasks.get(wire.task.task)
            if task is None:
                result.skipped_other_task += 1
                continue
            try:
                item = task.item(wire.task.seed, wire.task.index)
            except Exception as e:  # noqa: BLE001 - a ref the task cannot make (e.g. out of range)
                result.rejected.append((RejectReason.INVALID_FIELD, f"task ref: {type(e).__name__}"))
                continue
            if item.question != wire.prompt:
                result.rejected.append((RejectReason.PROMPT_MISMATCH, f"{wire.task.task} #{wire.task.index}"))
                continue
            group = self._group(wire, item, sender, result.same_model, current_version)
            if isinstance(group, tuple):
                result.rejected.append(group)
            else:
                result.groups.append(group)
        return result

    def _group(self, wire, item, sender: str, same_model: bool, current_version: int):
        task = self._tasks[item.ref.task]
        completions, logprobs, texts = [], [], []
        for c in wire.completions:
            if same_model:
                ids = list(c.token_ids)
                if len(ids) > self.max_completion_tokens:
                    return (RejectReason.TOO_LONG, f"{len(ids)} tokens > {self.max_completion_tokens}")
                if not ids or len(c.logprobs) != len(ids) or max(ids) >= self.vocab_size:
                    return (RejectReason.MODEL_MISMATCH, "token ids or log-probs do not fit this model")
                # Score what the tokens say, not the text field (the two could disagree).
                text = self.tokenizer.decode([t for t in ids if t not in self.eos_ids], skip_special_tokens=True)
                logprobs.append(list(c.logprobs))
            else:
                text = c.text
                if len(text) > self.max_foreign_completion_tokens * self._max_token_chars:
                    return (RejectReason.TOO_LONG, f"{len(text)} characters")
                ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
                if c.finish_reason == "stop":
                    ids.append(min(self.eos_ids))
                if len(ids) > self.max_foreign_completion_tokens:
                    return (RejectReason.TOO_LONG, f"{len(ids)} tokens here > {self.max_foreign_completion_tokens}")
                if not ids:
                    return (RejectReason.INVALID_FIELD, "empty completion")
            completions.append(ids)
            texts.append(text)
        return scored_group(
            task, item,
            prompt_token_ids=self.prompt_ids(item.question),
            completion_token_ids=completions,
            behavior_logprobs=logprobs if same_model else None,
            texts=texts,
            # The receiver's clock: the sender's version counter is not comparable to ours (and a
            # peer could claim a version from the future to look forever fresh).
            policy_version=current_version,
            source=sender,
        )
