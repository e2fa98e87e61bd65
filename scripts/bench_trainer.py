#!/usr/bin/env python3
"""The trainer's forward + backward: shared-prompt chunks (what the trainer runs) vs one row per sequence.

Both compute the same log-probs and gradients (tests/unit/test_trainer_forward.py) on the same
batches of generated groups (zero-advantage groups dropped, as the trainer does); the script
times forward + backward + AdamW for each, interleaved, and prints the medians and the ratio.
The baseline is the plain pass the trainer used before: every completion as its own
prompt + completion row, right-padded to the longest.

    .venv/bin/python scripts/bench_trainer.py                  # bundled policy, 32 prompts x 8
    .venv/bin/python scripts/bench_trainer.py --threads 1 --steps 20
"""
from __future__ import annotations

import argparse
import copy
import itertools
import statistics
import sys
import time

import torch

from swarmnode.policy import load_policy
from swarmnode.policy.hf_backend import HFGenerator
from swarmnode.trainer.experience import TrainBatch, collate
from swarmnode.trainer.forward import completion_logprobs
from swarmnode.trainer.loop import RolloutConfig, generate_groups, prompt_stream
from swarmnode.trainer.objectives import nonzero_advantage_groups, token_logprobs


def plain_logprobs(model, batch: TrainBatch) -> torch.Tensor:
    """The baseline: row b = prompt + completion, right-padded; the same [B, C] result."""
    prompts = [p[m.bool()].tolist() for p, m in zip(batch.prompt_ids, batch.prompt_mask)]
    lengths = batch.completion_lengths.tolist()
    rows = [prompts[g] + batch.completion_ids[b, : lengths[b]].tolist() for b, g in enumerate(batch.group_ids.tolist())]
    width = max(len(r) for r in rows)
    ids = torch.tensor([r + [0] * (width - len(r)) for r in rows])
    mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows])
    logp = token_logprobs(model(input_ids=ids, attention_mask=mask).logits[:, :-1], ids[:, 1:])
    # completion token j of row b is scored at target position len(prompt) - 1 + j
    starts = torch.tensor([len(prompts[g]) - 1 for g in batch.group_ids.tolist()])
    index = (starts[:, None] + torch.arange(batch.completion_ids.shape[1])[None]).clamp(max=logp.shape[1] - 1)
    return logp.gather(1, index) * batch.completion_mask


def timed_update(model, optimizer, batch: TrainBatch, logprobs) -> float:
    start = time.perf_counter()
    loss = -(logprobs(model, batch) * batch.completion_mask).sum() / batch.completion_mask.sum()
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return time.perf_counter() - start


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="bundled:tiny-policy")
    p.add_argument("--prompts", type=int, default=32)
    p.add_argument("--samples", type=int, default=8)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    policy = load_policy(args.model)
    config = RolloutConfig(prompts_per_step=args.prompts, samples_per_prompt=args.samples)
    generator = HFGenerator(policy.model, policy.tokenizer)
    stream = prompt_stream(config.tasks, config.data_seed)
    batches = []
    for _ in range(args.steps + 1):  # the first is a warm-up
        batch = collate(generate_groups(generator, list(itertools.islice(stream, args.prompts)), config),
                        policy.tokenizer.pad_token_id)
        batches.append(batch.select(nonzero_advantage_groups(batch.rewards, batch.group_ids)))
    ways = {"shared-prompt chunks": lambda m, b: completion_logprobs(m, b), "one row per sequence": plain_logprobs}
    models = {name: copy.deepcopy(policy.model) for name in ways}
    optimizers = {name: torch.optim.AdamW(models[name].parameters(), lr=1e-5, fused=True) for name in ways}
    seconds: dict[str, list[float]] = {name: [] for name in ways}
    for i, batch in enumerate(batches):
        for name, way in ways.items():  # interleaved: drift in machine load hits both
            took = timed_update(models[name], optimizers[name], batch, way)
            if i:
                seconds[name].append(took)
    rows = statistics.median(b.completion_ids.shape[0] for b in batches)
    print(f"model {args.model}: {args.prompts} prompts x {args.samples} samples ({rows:.0f} rows with nonzero "
          f"advantage per step, median), {args.threads} threads, median of {args.steps} steps")
    for name, values in seconds.items():
        print(f"{name:22s}: {statistics.median(values) * 1000:7.1f} ms per update")
    shared, plain = (statistics.median(v) for v in seconds.values())
    print(f"speed-up               : {plain / shared:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
