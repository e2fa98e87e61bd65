"""Honest-looking rollout groups for the hostile peer's attacks: real task items, real token ids
and the bundled policy's true per-token log-probs, as wire messages (`Crafter`)."""
from __future__ import annotations

from typing import Any

from swarmnode.protocol.generated import rollout_batch_pb2

TASKS = ("sum2", "sum3")
ITEM_SEED = 424_242  # not a training seed of the victim (1000 + 1000 * node) nor held-out (0)
SAMPLES = 4  # completions per group (the tests' samples_per_prompt)


class Crafter:
    """Real task items, real token ids and the bundled policy's true log-probs, as wire messages."""

    def __init__(self, n_items: int = 48):
        import torch

        from swarmnode.policy import load_policy
        from swarmnode.policy.loading import base_fingerprint, tokenizer_fingerprint

        torch.set_num_threads(1)
        policy = load_policy("bundled:tiny-policy")
        self.torch = torch
        self.model = policy.model.eval()
        self.tokenizer = policy.tokenizer
        self.model_fingerprint = policy.fingerprint
        self.tokenizer_fingerprint = tokenizer_fingerprint(policy.tokenizer)
        # The victim's initial weights are these: same-model batches claim its base, so their
        # log-probs are taken as behaviour log-probs.
        self.base_fingerprint = base_fingerprint(policy.model)
        self.vocab_size = len(policy.tokenizer)
        eos = policy.tokenizer.eos_token_id
        self.eos = eos if isinstance(eos, int) else min(eos)
        self.n_items = n_items
        self._items: dict[int, Any] = {}  # index -> (item, completions), made when first used
        self._next = 0

    def item(self, index: int) -> tuple[Any, list[tuple[str, list[int], list[float], float]]]:
        from swarmnode.tasks import get_task

        index %= self.n_items
        if index not in self._items:
            self._items[index] = self._completions(get_task(TASKS[index % len(TASKS)]).item(ITEM_SEED, index))
        return self._items[index]

    def _completions(self, item) -> tuple[Any, list[tuple[str, list[int], list[float], float]]]:
        """The true answer and three wrong ones as (text, token ids + EOS, true log-probs, reward)."""
        from swarmnode.policy.prompts import format_prompt

        prompt_ids = self.tokenizer(format_prompt(self.tokenizer, item.question), add_special_tokens=False)["input_ids"]
        answer = int(item.answer)
        completions = []
        for j, text in enumerate([item.answer, str(answer + 1), str(answer + 10), str(answer + 100)][:SAMPLES]):
            ids = self.tokenizer(text, add_special_tokens=False)["input_ids"] + [self.eos]
            completions.append((text, ids, self.logprobs(prompt_ids, ids), 1.0 if j == 0 else 0.0))
        return item, completions

    def logprobs(self, prompt_ids: list[int], completion_ids: list[int]) -> list[float]:
        """log p(token) of each completion token under the bundled policy at temperature 1."""
        torch = self.torch
        with torch.no_grad():
            logits = self.model(input_ids=torch.tensor([prompt_ids + completion_ids])).logits[0, len(prompt_ids) - 1: -1].float()
            lp = torch.log_softmax(logits, -1).gather(-1, torch.tensor(completion_ids)[:, None]).squeeze(-1)
        return [float(x) for x in lp]

    @staticmethod
    def _wire(item, completions, logprob_shift: float = 0.0) -> rollout_batch_pb2.RolloutGroup:
        wire = rollout_batch_pb2.RolloutGroup(prompt=item.question)
        wire.task.task, wire.task.seed, wire.task.index = item.ref.task, item.ref.seed, item.ref.index
        for text, ids, lps, reward in completions:
            wire.completions.add(text=text, token_ids=ids, logprobs=[x + logprob_shift for x in lps],
                                 reported_reward=reward, finish_reason="stop")
        return wire

    def group(self, *, logprob_shift: float = 0.0, index: int | None = None) -> rollout_batch_pb2.RolloutGroup:
        """An honest-looking group: the true answer once and three wrong ones (rewards differ), true
        log-probs (shifted by `logprob_shift` nats per token when lying)."""
        if index is None:
            index, self._next = self._next, self._next + 1
        return self._wire(*self.item(index), logprob_shift=logprob_shift)

    def task_group(self, task: str, seed: int, index: int) -> rollout_batch_pb2.RolloutGroup:
        """The same for any (task, seed, index): the prompt is the one that ref regenerates."""
        from swarmnode.tasks import get_task

        return self._wire(*self._completions(get_task(task).item(seed, index)))

    def batch(self, groups: list[rollout_batch_pb2.RolloutGroup], *, batch_id: int, window: int, policy_version: int,
              created_at: float, model_fingerprint: str | None = None, temperature: float = 1.0,
              top_p: float = 1.0) -> rollout_batch_pb2.RolloutBatch:
        batch = rollout_batch_pb2.RolloutBatch(
            window=window, policy_version=policy_version,
            model_fingerprint=self.model_fingerprint if model_fingerprint is None else model_fingerprint,
            tokenizer_fingerprint=self.tokenizer_fingerprint, created_at=created_at, batch_id=batch_id,
            temperature=temperature, top_p=top_p, base_fingerprint=self.base_fingerprint,
        )
        batch.groups.extend(groups)
        return batch
