"""From a task's question to the model's input: `format_prompt` (the text, through the chat
template), `left_pad` and `left_pad_positions` (batched token ids, aligned to the right).

Shared by every generation backend, the trainer (its batches and forward passes) and the intake
of peers' groups (re-tokenizing a peer's prompt): all must see a prompt the same way.
"""
from __future__ import annotations

import torch


def format_prompt(tokenizer, question: str) -> str:
    """The question as the model is prompted with it (its chat template, if it has one)."""
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(
            [{"role": "user", "content": question}], tokenize=False, add_generation_prompt=True
        )
    return question


def left_pad(rows: list[list[int]], pad_id: int, width: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask), both [B, width], rows aligned to the right; width defaults
    to the longest row's length (a given one is at least that)."""
    # Padded as Python lists and made a tensor once: a tensor per row costs more than the
    # padding itself on small batches.
    longest = max(len(r) for r in rows)
    width = longest if width is None else width
    if width < longest:
        raise ValueError(f"width {width} is shorter than the longest row ({longest} tokens)")
    ids = torch.tensor([[pad_id] * (width - len(r)) + list(r) for r in rows], dtype=torch.long)
    mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows], dtype=torch.long)
    return ids, mask


def left_pad_positions(mask: torch.Tensor) -> torch.Tensor:
    """Position ids of left-padded rows: 0 at each row's first real token (0 on the padding too)."""
    return (mask.cumsum(-1) - 1).clamp(min=0)
