#!/usr/bin/env python3
"""The trainer's update on generated batches: each forward chunking, and a plain padded pass.

For each chunking (trainer/forward.py: length-chunked shared prompts, one chunk, plain padded
rows) the script runs the real `Trainer.step` (micro-batches sized to the memory budget,
gradients accumulated) on the same batches, and reports median seconds, completion tokens/s
and peak GPU memory. The baseline is one plain padded forward + backward + AdamW over the
largest leading part of each batch that fits the same budget in one pass: its tokens/s is what
the goal "within 1.2x of a plain padded pass per token" compares against.

    .venv/bin/python scripts/bench/bench_trainer.py                  # bundled policy, 32 prompts x 8, CPU
    .venv/bin/python scripts/bench/bench_trainer.py --model-shape 0.5b --device cuda --dtype bfloat16 \\
        --prompts 64 --samples 8 --max-new-tokens 128 --steps 3 --json /tmp/trainer.json
"""
from __future__ import annotations

import argparse
import copy
import gc
import itertools
import json
import statistics
import sys
import time
from pathlib import Path

import torch

from swarmnode.node.preflight import device_problem
from swarmnode.policy import SamplingParams, load_policy
from swarmnode.policy.attention import attention_backends
from swarmnode.policy.hf_backend import HFGenerator
from swarmnode.trainer.bench import MODEL_SHAPES, shaped_policy
from swarmnode.trainer.experience import collate
from swarmnode.trainer.forward import micro_batch_budget, padded_logprobs, row_lengths
from swarmnode.trainer.loop import RolloutConfig, generate_groups, prompt_stream
from swarmnode.trainer.objectives import nonzero_advantage_groups
from swarmnode.trainer.trainer import Trainer, TrainerConfig


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="bundled:tiny-policy")
    p.add_argument("--model-shape", choices=sorted(MODEL_SHAPES), help="a random-init Qwen2 of this shape instead of --model")
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    p.add_argument("--prompts", type=int, default=32)
    p.add_argument("--samples", type=int, default=8)
    p.add_argument("--max-new-tokens", type=int, default=8)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--chunkings", default="length,single,plain")
    p.add_argument("--cudnn-variants", action="store_true", help="also run each chunking with cuDNN attention allowed")
    p.add_argument("--micro-batch-tokens", type=int, help="padded positions per micro-batch (default: the trainer's auto budget)")
    p.add_argument("--all-groups", action="store_true", help="rewards 1,0,1,0.. in every group, so every group trains "
                                                             "(a random model earns none); on with --model-shape")
    p.add_argument("--threads", type=int, default=torch.get_num_threads())
    p.add_argument("--json", type=Path, help="also write the figures here")
    args = p.parse_args(argv)
    if problem := device_problem(args.device):
        p.exit(2, f"error: --device {args.device}: {problem}\n")
    return args


def synced_seconds(device: torch.device, run, *args):
    """(seconds, result) of run(*args), the GPU's queued work included."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    result = run(*args)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - start, result


def fresh_memory(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def peak_gib(device: torch.device) -> float | None:
    return round(torch.cuda.max_memory_allocated(device) / 2**30, 2) if device.type == "cuda" else None


def make_batches(policy, args) -> list[list]:
    """args.steps + 1 batches of scored groups from the model itself (the first is a warm-up)."""
    config = RolloutConfig(prompts_per_step=args.prompts, samples_per_prompt=args.samples,
                           sampling=SamplingParams(temperature=1.0, max_new_tokens=args.max_new_tokens))
    generator = HFGenerator(policy.model, policy.tokenizer)
    stream = prompt_stream(config.tasks, config.data_seed)
    batches = []
    for _ in range(args.steps + 1):
        groups = generate_groups(generator, list(itertools.islice(stream, args.prompts)), config)
        if args.all_groups:
            for g in groups:
                g.rewards = [float(i % 2) for i in range(g.size)]
        batches.append(groups)
    return batches


def bench_chunking(policy, batches, chunking: str, args, device, cudnn: bool = False) -> dict:
    """Trainer.step on every batch; medians over all but the first."""
    fresh_memory(device)
    config = TrainerConfig(lr=1e-6, forward_chunking=chunking, micro_batch_tokens=args.micro_batch_tokens,
                           cudnn_attention=cudnn)
    trainer = Trainer(copy.deepcopy(policy.model), policy.tokenizer.pad_token_id, config)
    seconds, tokens, parts = [], [], []
    for i, groups in enumerate(batches):
        took, result = synced_seconds(device, trainer.step, groups)
        if i and result.trained:
            seconds.append(took)
            tokens.append(result.completion_tokens)
            parts.append(result.stats["micro_batches"])
    median = statistics.median(seconds)
    out = {"seconds": round(median, 4), "completion_tokens": int(statistics.median(tokens)),
           "tokens_per_s": round(statistics.median(t / s for t, s in zip(tokens, seconds)), 1),
           "micro_batches": statistics.median(parts), "peak_gib": peak_gib(device)}
    del trainer
    return out


def plain_update(model, optimizer, batch) -> None:
    """One padded forward + backward + AdamW step on the mean completion log-prob (cuDNN
    attention excluded, as the trainer runs)."""
    with attention_backends(batch.prompt_ids.device, cudnn=False):
        loss = -(padded_logprobs(model, batch) * batch.completion_mask).sum() / batch.completion_mask.sum()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
    optimizer.step()


def bench_plain_one_pass(policy, batches, budget: int, device) -> dict:
    """One padded forward + backward + AdamW over the leading groups of each batch that fit `budget`."""
    fresh_memory(device)
    model = copy.deepcopy(policy.model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6, fused=True)
    seconds, tokens, rows = [], [], []
    for i, groups in enumerate(batches):
        batch = collate(groups, policy.tokenizer.pad_token_id)
        batch = batch.select(nonzero_advantage_groups(batch.rewards, batch.group_ids))
        lengths = row_lengths(batch)
        fit = max(n for n in range(1, len(lengths) + 1) if n * max(lengths[:n]) <= budget or n == 1)
        part = batch.select(torch.arange(len(lengths)) < fit).to(device)
        took, _ = synced_seconds(device, plain_update, model, optimizer, part)
        if i:
            seconds.append(took)
            tokens.append(part.num_completion_tokens)
            rows.append(fit)
    out = {"seconds": round(statistics.median(seconds), 4), "rows": int(statistics.median(rows)),
           "tokens_per_s": round(statistics.median(t / s for t, s in zip(tokens, seconds)), 1), "peak_gib": peak_gib(device)}
    del model, optimizer
    return out


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    if args.model_shape:
        policy, args.all_groups = shaped_policy(args.model_shape, args.device, args.dtype), True
    else:
        policy = load_policy(args.model, device=args.device, dtype=args.dtype)
    batches = make_batches(policy, args)
    budget = args.micro_batch_tokens or micro_batch_budget(policy.model, device)
    results = {"model": policy.name, "device": str(device), "dtype": args.dtype, "prompts": args.prompts,
               "samples": args.samples, "max_new_tokens": args.max_new_tokens, "steps": args.steps,
               "micro_batch_tokens": budget, "chunkings": {},
               "command": "python scripts/bench/bench_trainer.py " + " ".join(argv)}
    runs = [(c, False) for c in args.chunkings.split(",")]
    runs += [(c, True) for c in args.chunkings.split(",")] if args.cudnn_variants else []
    for chunking, cudnn in runs:
        name = f"{chunking} (cuDNN attention)" if cudnn else chunking
        results["chunkings"][name] = bench_chunking(policy, batches, chunking, args, device, cudnn)
        print(name, results["chunkings"][name], flush=True)
    results["plain_one_pass"] = bench_plain_one_pass(policy, batches, budget, device)
    print("plain one pass", results["plain_one_pass"], flush=True)
    best = max(results["chunkings"], key=lambda c: results["chunkings"][c]["tokens_per_s"])
    results["fastest"] = best
    results["plain_one_pass_over_fastest"] = round(
        results["plain_one_pass"]["tokens_per_s"] / results["chunkings"][best]["tokens_per_s"], 3)
    print(f"fastest chunking: {best}; plain one pass / it, per token: {results['plain_one_pass_over_fastest']:.2f}x")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
