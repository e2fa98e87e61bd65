"""Sampling one token per row from logits (pure torch, no model)."""
from __future__ import annotations

import torch


def top_p_filter(logits: torch.Tensor, top_p: float) -> torch.Tensor:
    """Keep the smallest set of tokens whose probability mass reaches top_p; others get -inf.

    The most likely token is always kept. top_p >= 1 returns the logits unchanged.
    """
    if top_p >= 1.0:
        return logits
    sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
    probs = torch.softmax(sorted_logits, dim=-1)
    mass_before = probs.cumsum(dim=-1) - probs  # mass of strictly more likely tokens
    drop_sorted = mass_before >= top_p
    drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
    return logits.masked_fill(drop, float("-inf"))


def sample_next(
    logits: torch.Tensor, temperature: float, top_p: float, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sample tokens [B] from logits [B, V]; return (tokens, log-probs).

    The log-prob is log softmax(logits / temperature)[token]: the behaviour policy's probability
    of the token at that temperature, before top-p truncation (the trainer recomputes the same
    quantity, so the importance ratios compare like with like). temperature == 0 is greedy.
    """
    logits = logits.float()
    if temperature <= 0.0:
        tokens = logits.argmax(dim=-1)
        return tokens, torch.log_softmax(logits, dim=-1).gather(-1, tokens[:, None]).squeeze(-1)
    scaled = logits / temperature
    logprobs = torch.log_softmax(scaled, dim=-1)
    probs = torch.softmax(top_p_filter(scaled, top_p), dim=-1)
    tokens = torch.multinomial(probs, 1, generator=generator).squeeze(-1)
    return tokens, logprobs.gather(-1, tokens[:, None]).squeeze(-1)
