"""Generation backends' shared interface and data (no torch model code here)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Protocol, Sequence

import torch


@dataclass(frozen=True)
class SamplingParams:
    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 16
    stop: tuple[str, ...] = ()  # extra stop strings (EOS always stops)
    seed: int | None = None


@dataclass
class Completion:
    text: str  # decoded, without EOS or stop string
    token_ids: list[int]  # sampled tokens, EOS included when the model stopped
    logprobs: list[float]  # behaviour log-prob of each sampled token (see policy.sampling)
    finish_reason: str  # "stop" (EOS or stop string) or "length"


@dataclass
class PromptGeneration:
    """All completions sampled for one prompt (one GRPO group)."""

    prompt: str  # the question, before the chat template
    prompt_token_ids: list[int]  # the chat-formatted prompt as the model saw it
    completions: list[Completion] = field(default_factory=list)
    policy_version: int = 0


def finish_completion(tokenizer, eos_ids: set[int], ids: list[int], logprobs: list[float],
                      stop: tuple[str, ...]) -> Completion:
    """Sampled tokens as a Completion: cut after the first EOS (kept in token_ids) and before
    the first stop string (keeping only the tokens that produced the text before it)."""
    finish = "length"
    for i, token in enumerate(ids):
        if token in eos_ids:
            ids, logprobs, finish = ids[: i + 1], logprobs[: i + 1], "stop"
            break
    text = tokenizer.decode([t for t in ids if t not in eos_ids], skip_special_tokens=True)
    for string in stop:
        cut = text.find(string)
        if cut >= 0:
            text, finish = text[:cut], "stop"
            keep = len(tokenizer(text, add_special_tokens=False)["input_ids"])
            ids, logprobs = ids[:keep], logprobs[:keep]
    return Completion(text=text, token_ids=list(ids), logprobs=list(logprobs), finish_reason=finish)


class Generator(Protocol):
    """What the node needs of a generation backend (`hf`, `vllm`)."""

    policy_version: int

    def generate(self, prompts: Sequence[str], samples_per_prompt: int, params: SamplingParams) -> list[PromptGeneration]:
        ...

    def load_weights(self, state_dict: Mapping[str, torch.Tensor], version: int) -> None:
        """Take a new policy version's weights (weight sync from the trainer)."""
