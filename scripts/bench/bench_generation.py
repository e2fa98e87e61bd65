#!/usr/bin/env python3
"""The `hf` backend's decode paths on the same prompts: the cached loop, the bucketed loop,
model.generate, and model.generate with a static KV cache (compiled into CUDA graphs on a GPU).

Every path samples the same number of completions (prompts x samples, up to --max-new-tokens
each) with a KV cache; the script prints tokens/s for each (median of --repeats, after one
warm-up round, the paths interleaved) and each path's ratio to model.generate. With
--cudnn-variants every path also runs with the other attention setting (the loops with cuDNN
attention allowed, generate without it). With --gap it
measures the generator-vs-trainer log-prob gap on this model (float32 logits on and off).

    .venv/bin/python scripts/bench/bench_generation.py                 # bundled tiny policy, CPU
    .venv/bin/python scripts/bench/bench_generation.py --model-shape 0.5b --device cuda --dtype bfloat16 \\
        --prompts 64 --samples 8 --max-new-tokens 128 --decodes loop,generate,static --json /tmp/generation.json

A static decode's first batch of each shape (its compile, on a GPU) is in the warm-up round;
its seconds are reported as static_first_batch_s.
"""
from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from pathlib import Path

import torch

from swarmnode.node.preflight import device_problem
from swarmnode.policy import SamplingParams, load_policy
from swarmnode.policy.hf_backend import HFGenerator
from swarmnode.tasks import DEFAULT_TASKS
from swarmnode.trainer.bench import MODEL_SHAPES, logprob_gap, shaped_policy
from swarmnode.trainer.loop import prompt_stream


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="bundled:tiny-policy")
    p.add_argument("--model-shape", choices=sorted(MODEL_SHAPES), help="a random-init Qwen2 of this shape instead of --model")
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    p.add_argument("--prompts", type=int, default=32)
    p.add_argument("--samples", type=int, default=8)
    p.add_argument("--max-new-tokens", type=int, default=8)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--decodes", default="auto,loop,bucketed,generate")
    p.add_argument("--cudnn-variants", action="store_true", help="also run every path with the other cuDNN attention setting")
    p.add_argument("--gap", action="store_true", help="measure the generator-vs-trainer log-prob gap too")
    p.add_argument("--threads", type=int, default=torch.get_num_threads())
    p.add_argument("--json", type=Path, help="also write the figures here")
    args = p.parse_args(argv)
    if problem := device_problem(args.device):
        p.exit(2, f"error: --device {args.device}: {problem}\n")
    return args


def tokens_per_second(generator: HFGenerator, prompts: list[str], samples: int, params: SamplingParams) -> float:
    start = time.perf_counter()
    groups = generator.generate(prompts, samples, params)  # returns CPU tensors' values: the GPU is done
    seconds = time.perf_counter() - start
    return sum(len(c.token_ids) for g in groups for c in g.completions) / seconds


def variants(args) -> dict[str, dict]:
    """name -> HFGenerator keyword arguments. "generate" is model.generate as a user calls it
    (every attention backend allowed); the project's loops run as configured by default (no cuDNN)."""
    out = {}
    for decode in args.decodes.split(","):
        stock = decode == "generate"
        out[decode] = {"decode": decode, "cudnn_attention": stock}
        if args.cudnn_variants and decode != "auto":
            out[f"{decode} ({'no' if stock else 'with'} cuDNN attention)"] = {"decode": decode, "cudnn_attention": not stock}
    return out


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.model_shape:
        policy = shaped_policy(args.model_shape, args.device, args.dtype)
    else:
        policy = load_policy(args.model, device=args.device, dtype=args.dtype)
    prompts = [i.question for i in itertools.islice(prompt_stream(DEFAULT_TASKS, 1000), args.prompts)]
    generators = {name: HFGenerator(policy.model, policy.tokenizer, **kwargs) for name, kwargs in variants(args).items()}
    if "auto" in generators:  # auto's first batches are its trials: run them before timing it
        auto = generators["auto"]
        while auto.on_trial:
            auto.generate(prompts, args.samples, SamplingParams(temperature=1.0, max_new_tokens=args.max_new_tokens, seed=99))
    rates: dict[str, list[float]] = {name: [] for name in generators}
    for repeat in range(args.repeats + 1):  # the first round warms up and is not counted
        for name, generator in generators.items():  # interleaved, so drift in machine load hits every path
            params = SamplingParams(temperature=1.0, max_new_tokens=args.max_new_tokens, seed=repeat)
            rate = tokens_per_second(generator, prompts, args.samples, params)
            if repeat:
                rates[name].append(rate)
    medians = {name: statistics.median(r) for name, r in rates.items()}
    device = next(policy.model.parameters()).device
    results = {"model": policy.name, "device": str(device), "dtype": args.dtype, "prompts": args.prompts,
               "samples": args.samples, "max_new_tokens": args.max_new_tokens, "repeats": args.repeats,
               "tokens_per_s": {n: round(v, 1) for n, v in medians.items()},
               "command": "python scripts/bench/bench_generation.py " + " ".join(argv)}
    # the path each generator ended on: a static decode that failed fell back to the loop
    results["decode_used"] = {name: g.decode for name, g in generators.items()}
    if "auto" in generators:
        results["auto"] = {"chose": generators["auto"].decode,
                           "trial_tokens_per_s": {p: [round(r, 1) for r in v] for p, v in generators["auto"].decode_rates.items()}}
    print(f"model {policy.name} on {device} ({args.dtype}): {args.prompts} prompts x {args.samples} samples, "
          f"<= {args.max_new_tokens} new tokens, median of {args.repeats}")
    for name, value in medians.items():
        ratio = f"  ({value / medians['generate']:.2f}x generate)" if "generate" in medians else ""
        chose = f"  [chose {results['auto']['chose']}]" if name == "auto" else ""
        print(f"{name:34s}: {value:9.0f} tokens/s{ratio}{chose}")
    compiled = {name: {f"{rows}x{length}": round(seconds, 1) for (rows, length), seconds in g.static_shapes.items()}
                for name, g in generators.items() if g.static_shapes}
    if compiled:
        results["static_first_batch_s"] = compiled
        print("static decode, first batch of each shape (rows x cached tokens: seconds):", json.dumps(compiled))
    if "generate" in medians:
        results["over_generate"] = {n: round(v / medians["generate"], 3) for n, v in medians.items()}
    if args.gap:
        params = SamplingParams(temperature=1.0, max_new_tokens=args.max_new_tokens, seed=0)
        results["logprob_gap"] = {f"fp32_logits={on}": logprob_gap(policy, prompts, args.samples, params, fp32_logits=on)
                                  for on in (False, True)}
        print("generator vs trainer log-prob gap:", json.dumps(results["logprob_gap"]))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
