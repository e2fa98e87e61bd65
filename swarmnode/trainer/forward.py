"""The trainer's forward pass: log-probs of the completion tokens, each prompt run once.

A group's completions share their prompt, so the prompt runs through the model once per group
and its keys/values are handed to every completion of the group (gradients flow back through
them to the shared prompt pass). Completions are then run in chunks of similar length, so a
batch whose answers take 2-3 tokens is not padded out to its one 8-token sample. On the bundled
policy this cuts the positions the model runs over per 32x8 batch from ~3,300 (every row =
prompt + completion, padded to the longest) to ~870, and from ~1,400 to ~420 for the rows left
once zero-advantage groups are dropped; `scripts/bench_trainer.py` times an update against the
one-sequence-per-row pass.

The result equals the plain pass over padded prompt + completion rows: attention never crosses
into padding, and positions count real tokens only (tests/unit/test_trainer_forward.py).
"""
from __future__ import annotations

import torch
from transformers import DynamicCache

from swarmnode.policy.hf_backend import left_pad_positions
from swarmnode.trainer.experience import TrainBatch
from swarmnode.trainer.objectives import token_logprobs

# One more forward call costs about as much as this many extra padded positions on a small
# model (Python and kernel launch overhead per layer); chunks merge while padding is cheaper.
CHUNK_OVERHEAD_POSITIONS = 96


def length_chunks(lengths: list[int], overhead: int = CHUNK_OVERHEAD_POSITIONS) -> list[list[int]]:
    """Row indices grouped into chunks of similar length, shortest first.

    Rows are sorted by length; a chunk of n rows padded to width w costs n * w positions plus
    `overhead` for its forward call. Walking the distinct lengths upwards, the next length
    joins the current chunk when the padding it adds to the rows already there,
    n * (new_w - w), is at most `overhead`; otherwise it starts a new chunk.
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    chunks: list[list[int]] = []
    width = 0
    for i in order:
        if chunks and (lengths[i] == width or len(chunks[-1]) * (lengths[i] - width) <= overhead):
            chunks[-1].append(i)
        else:
            chunks.append([i])
        width = lengths[i]
    return chunks


def completion_logprobs(model, batch: TrainBatch, temperature: float = 1.0,
                        overhead: int = CHUNK_OVERHEAD_POSITIONS) -> torch.Tensor:
    """log pi(completion token) for every row and position, [B, C] (0 on padding).

    Differentiable with respect to the model's parameters when grad is enabled.
    """
    device = batch.prompt_ids.device
    prompt_positions = left_pad_positions(batch.prompt_mask)
    prompt_out = model(input_ids=batch.prompt_ids, attention_mask=batch.prompt_mask, position_ids=prompt_positions,
                       past_key_values=DynamicCache(), use_cache=True, logits_to_keep=1)
    prompt_cache = [(layer.keys, layer.values) for layer in prompt_out.past_key_values.layers]
    first_logits = prompt_out.logits[:, -1]  # [G, V]: predicts each completion's first token
    prompt_end = prompt_positions[:, -1] + 1  # [G]: the position of each completion's first token
    lengths = batch.completion_lengths.tolist()
    width = batch.completion_ids.shape[1]
    parts, order = [], []
    for rows in length_chunks(lengths, overhead):
        index = torch.tensor(rows, dtype=torch.long, device=device)
        groups = batch.group_ids[index]
        chunk_width = max(1, max(lengths[r] for r in rows))
        tokens = batch.completion_ids[index, :chunk_width]
        logits = first_logits[groups][:, None]  # [R, 1, V]
        if chunk_width > 1:
            # Feed tokens 0..w-2: each predicts the next; the last token predicts nothing needed.
            feed = tokens[:, :-1]
            mask = torch.cat([batch.prompt_mask[groups], batch.completion_mask[index, : chunk_width - 1].long()], dim=1)
            positions = prompt_end[groups][:, None] + torch.arange(chunk_width - 1, device=device)[None]
            cache = DynamicCache(ddp_cache_data=[(k[groups], v[groups]) for k, v in prompt_cache])
            out = model(input_ids=feed, attention_mask=mask, position_ids=positions, past_key_values=cache, use_cache=True)
            logits = torch.cat([logits, out.logits], dim=1)
        logp = token_logprobs(logits / temperature, tokens)
        parts.append(torch.nn.functional.pad(logp, (0, width - chunk_width)))
        order.extend(rows)
    stacked = torch.cat(parts, dim=0)
    inverse = torch.empty(len(order), dtype=torch.long, device=device)
    inverse[torch.tensor(order, dtype=torch.long, device=device)] = torch.arange(len(order), device=device)
    return stacked[inverse] * batch.completion_mask
