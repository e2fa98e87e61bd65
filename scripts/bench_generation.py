#!/usr/bin/env python3
"""The `hf` backend's two decode paths on the same prompts: hand-written cached loop vs model.generate.

Both sample the same number of completions (prompts x samples, up to --max-new-tokens each) with
a KV cache; the script prints tokens/s for each and the loop/generate ratio (the backend uses
the loop by default because it is the faster one here).

    .venv/bin/python scripts/bench_generation.py                 # bundled tiny policy
    .venv/bin/python scripts/bench_generation.py --model PATH --prompts 64 --samples 8
"""
from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time

import torch

from swarmnode.policy import SamplingParams, load_policy
from swarmnode.policy.hf_backend import HFGenerator
from swarmnode.tasks import DEFAULT_TASKS
from swarmnode.trainer.loop import prompt_stream


def tokens_per_second(generator: HFGenerator, prompts: list[str], samples: int, params: SamplingParams) -> tuple[float, int]:
    start = time.perf_counter()
    groups = generator.generate(prompts, samples, params)
    seconds = time.perf_counter() - start
    tokens = sum(len(c.token_ids) for g in groups for c in g.completions)
    return tokens / seconds, tokens


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="bundled:tiny-policy")
    p.add_argument("--prompts", type=int, default=32)
    p.add_argument("--samples", type=int, default=8)
    p.add_argument("--max-new-tokens", type=int, default=8)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    policy = load_policy(args.model)
    prompts = [i.question for i in itertools.islice(prompt_stream(DEFAULT_TASKS, 1000), args.prompts)]
    results: dict[str, list[float]] = {"loop": [], "generate": []}
    for repeat in range(args.repeats + 1):  # the first round warms up and is not counted
        for decode in ("loop", "generate"):  # alternate, so drift in machine load hits both
            params = SamplingParams(temperature=1.0, max_new_tokens=args.max_new_tokens, seed=repeat)
            rate, tokens = tokens_per_second(HFGenerator(policy.model, policy.tokenizer, decode=decode), prompts, args.samples, params)
            if repeat:
                results[decode].append(rate)
    loop, generate = statistics.median(results["loop"]), statistics.median(results["generate"])
    print(f"model {args.model}: {args.prompts} prompts x {args.samples} samples, <= {args.max_new_tokens} new tokens, "
          f"{args.threads} threads, median of {args.repeats}")
    print(f"cached loop     : {loop:8.0f} tokens/s")
    print(f"model.generate  : {generate:8.0f} tokens/s")
    print(f"loop / generate : {loop / generate:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
