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


def sampling_distribution(logits: torch.Tensor, temperature: float, top_p: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The behaviour policy at one step, from logits [B, V]: (log-probs, logits to draw from).

        log-probs  = log softmax(logits / temperature)
        draw from  = softmax(top_p_filter(logits / temperature, top_p))

    The log-probs are taken before top-p truncation: the trainer recomputes the same quantity,
    so the importance ratios compare like with like. temperature == 0 is greedy: log softmax
    of the logits, and the logits themselves (their argmax is the token).
    """
    logits = logits.float()
    if temperature <= 0.0:
        return torch.log_softmax(logits, dim=-1), logits
    scaled = logits / temperature
    return torch.log_softmax(scaled, dim=-1), top_p_filter(scaled, top_p)


def sample_next(
    logits: torch.Tensor, temperature: float, top_p: float, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sample tokens [B] from logits [B, V] under sampling_distribution; return (tokens, their log-probs)."""
    logprobs, draw_from = sampling_distribution(logits, temperature, top_p)
    if temperature <= 0.0:
        tokens = draw_from.argmax(dim=-1)
    else:
        tokens = torch.multinomial(torch.softmax(draw_from, dim=-1), 1, generator=generator).squeeze(-1)
    return tokens, logprobs.gather(-1, tokens[:, None]).squeeze(-1)
