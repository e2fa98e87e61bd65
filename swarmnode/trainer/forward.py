"""The trainer's forward pass: log-probs of the completion tokens, and how a batch is cut for it.

Three ways to run a batch (`chunking`, config `training.forward_chunking`), all with the same
result (tests/unit/trainer/test_forward.py):

- `length`: a group's completions share their prompt, so the prompt runs through the model
  once per group and its keys/values are handed to every completion of the group (gradients
  flow back through them to the shared prompt pass). Completions then run in chunks of similar
  length, so a batch whose answers take 2-3 tokens is not padded out to its one 8-token sample.
  On the bundled policy on a CPU this cuts the positions per 32x8 batch from ~3,300 to ~870.
- `single`: the shared prompt pass, then all completions in one chunk.
- `plain`: every row is its prompt + completion, padded; one forward call. On a GPU the calls
  and shapes of the chunked pass cost more than the padding saves.

`auto` takes the one measured fastest on the device type (AUTO_CHUNKING): `length` on a CPU;
`plain` on a GPU (`scripts/bench/bench_trainer.py`; the figures: docs/experiments/gpu.md).

A batch too large for the device's memory is cut into micro-batches of rows (micro_batches)
whose gradients the trainer accumulates; `micro_batch_budget` sizes them.
"""
from __future__ import annotations

import torch
from transformers import DynamicCache

from swarmnode.policy.kv_cache import returned_cache, with_cache
from swarmnode.policy.prompts import left_pad_positions
from swarmnode.trainer.experience import TrainBatch
from swarmnode.trainer.objectives import token_logprobs

# One more forward call costs about as much as this many extra padded positions on a small
# model (Python and kernel launch overhead per layer); chunks merge while padding is cheaper.
CHUNK_OVERHEAD_POSITIONS = 96
CHUNKINGS = ("auto", "length", "single", "plain")
AUTO_CHUNKING = {"cpu": "length", "cuda": "plain"}
# Without a free-memory reading (a CPU), micro-batches are sized to this many bytes of activations.
CPU_ACTIVATION_BYTES = 4 * 2**30
# Share of a GPU's free memory (after weights and optimizer state) a micro-batch may use: the
# generator shares the GPU and grows its KV cache while the trainer runs.
GPU_MEMORY_FRACTION = 0.5


def resolve_chunking(chunking: str, device: torch.device) -> str:
    """The chunking to run: `chunking` itself, or for "auto" the one measured fastest on the device type."""
    if chunking not in CHUNKINGS:
        raise ValueError(f"training.forward_chunking is one of {', '.join(CHUNKINGS)}, got {chunking!r}")
    return AUTO_CHUNKING.get(device.type, AUTO_CHUNKING["cpu"]) if chunking == "auto" else chunking


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


def micro_batches(lengths: list[int], budget: int) -> list[list[int]]:
    """Row indices cut into micro-batches of at most `budget` padded positions, shortest rows first.

    A micro-batch of n rows whose longest (prompt + completion) is w costs n * w positions;
    rows join the current micro-batch in order of length while that stays <= budget. A row
    longer than the budget is a micro-batch of its own.
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    parts: list[list[int]] = []
    for i in order:
        if parts and (len(parts[-1]) + 1) * lengths[i] <= budget:
            parts[-1].append(i)
        else:
            parts.append([i])
    return parts


def training_bytes_per_position(config, dtype_bytes: int) -> int:
    """Activation memory one position costs a forward + backward of a decoder LM, estimated:

        bytes = layers * (34 * hidden + 10 * intermediate) * dtype_bytes / 2 + 12 * vocab

    (per layer: the saved inputs of the norms, projections, attention and gated MLP; per
    position: float32 logits, their log-softmax and its gradient). On a Qwen2 of Qwen2.5-0.5B's
    shape in bf16 this gives a little more than was measured on a GPU: it errs on the safe side
    (docs/experiments/gpu.md).
    """
    # transformers maps GPT-2's n_embd / n_layer to these names too (attribute_map).
    hidden = config.hidden_size
    intermediate = getattr(config, "intermediate_size", None) or getattr(config, "n_inner", None) or 4 * hidden
    layers = config.num_hidden_layers
    return int(layers * (34 * hidden + 10 * intermediate) * dtype_bytes / 2 + 12 * config.vocab_size)


def micro_batch_budget(model, device: torch.device) -> int:
    """Padded positions per micro-batch: GPU_MEMORY_FRACTION of the GPU's free memory (the
    allocator's cached but unused blocks count as free), or CPU_ACTIVATION_BYTES on a CPU,
    divided by training_bytes_per_position. At least 256."""
    per_position = training_bytes_per_position(model.config, next(model.parameters()).element_size())
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        available = GPU_MEMORY_FRACTION * (free + cached)
    else:
        available = CPU_ACTIVATION_BYTES
    return max(256, int(available // per_position))


def row_lengths(batch: TrainBatch) -> list[int]:
    """Positions each row runs over in a plain pass: its prompt's tokens + its completion's."""
    prompt_lengths = batch.prompt_mask.sum(dim=1)[batch.group_ids]
    return (prompt_lengths + batch.completion_lengths).tolist()


def completion_logprobs(model, batch: TrainBatch, temperature: float = 1.0,
                        overhead: int = CHUNK_OVERHEAD_POSITIONS, chunking: str = "length") -> torch.Tensor:
    """log pi(completion token) for every row and position, [B, C] (0 on padding).

    Differentiable with respect to the model's parameters when grad is enabled. `chunking` is
    "length" (chunks merged while their padding costs less than `overhead`), "single" or "plain".
    """
    if chunking == "plain":
        return padded_logprobs(model, batch, temperature)
    if chunking == "single":
        overhead = 1 << 62
    elif chunking != "length":
        raise ValueError(f"chunking is length, single or plain, got {chunking!r}")
    return _shared_prompt_logprobs(model, batch, temperature, overhead)


def padded_logprobs(model, batch: TrainBatch, temperature: float = 1.0) -> torch.Tensor:
    """The plain pass: row b = its prompt (left-padded) + its completion (right-padded), one
    forward call over [B, P + C]; logits only at the C positions that score completion tokens."""
    width = batch.completion_ids.shape[1]
    ids = torch.cat([batch.prompt_ids[batch.group_ids], batch.completion_ids], dim=1)
    mask = torch.cat([batch.prompt_mask[batch.group_ids], batch.completion_mask.long()], dim=1)
    # Position P - 1 (the prompt's last token) scores completion token 0, ..., P + C - 2 token C - 1.
    logits = model(input_ids=ids, attention_mask=mask, position_ids=left_pad_positions(mask),
                   use_cache=False, logits_to_keep=width + 1).logits[:, :-1]
    return token_logprobs(logits / temperature, batch.completion_ids) * batch.completion_mask


def _shared_prompt_logprobs(model, batch: TrainBatch, temperature: float, overhead: int) -> torch.Tensor:
    """Each prompt once, its keys/values shared by its completions, run in length_chunks."""
    device = batch.prompt_ids.device
    prompt_positions = left_pad_positions(batch.prompt_mask)
    prompt_out = model(input_ids=batch.prompt_ids, attention_mask=batch.prompt_mask, position_ids=prompt_positions,
                       **with_cache(model, DynamicCache()), logits_to_keep=1)
    prompt_cache = [(layer.keys, layer.values) for layer in returned_cache(prompt_out).layers]
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
            out = model(input_ids=feed, attention_mask=mask, position_ids=positions, **with_cache(model, cache))
            logits = torch.cat([logits, out.logits], dim=1)
        logp = token_logprobs(logits / temperature, tokens)
        parts.append(torch.nn.functional.pad(logp, (0, width - chunk_width)))
        order.extend(rows)
    stacked = torch.cat(parts, dim=0)
    inverse = torch.empty(len(order), dtype=torch.long, device=device)
    inverse[torch.tensor(order, dtype=torch.long, device=device)] = torch.arange(len(order), device=device)
    return stacked[inverse] * batch.completion_mask
