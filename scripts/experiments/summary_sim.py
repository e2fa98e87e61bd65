#!/usr/bin/env python3
"""Gradient summaries in one process, to explore settings fast (not the headline figure).

N copies of a policy train in turn (sync generation, the node's own Trainer, each its own
question stream); every H local steps each runs the node's real OuterLoop: compress its
pseudo-gradient with error feedback, merge up to P peers' decoded summaries (those sent since
its last outer step: staleness 0 or 1 outer steps), step the anchor. Held-out greedy accuracy
(256 items per task, seed 0) every --eval-every steps. Every arm gets the same local steps.

    .venv/bin/python scripts/experiments/summary_sim.py --nodes 4 --steps 600 --outer-lr 1.0 --momentum 0.5
    .venv/bin/python scripts/experiments/summary_sim.py --nodes 1 --steps 600          # the lone baseline

The daemons' experiment is scripts/experiments/summary_experiment.py.
"""
from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

import torch

from swarmnode.policy import SamplingParams, load_policy
from swarmnode.policy.hf_backend import HFGenerator
from swarmnode.summaries import CompressionConfig, OuterConfig, OuterLoop, Received, decode_tensor
from swarmnode.testing.experiments.local_runs import append_run
from swarmnode.trainer.evaluate import greedy_accuracy, heldout_items, questions_of
from swarmnode.trainer.loop import RolloutConfig, generate_groups, prompt_stream
from swarmnode.trainer.trainer import Trainer, TrainerConfig


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=4)
    p.add_argument("--steps", type=int, default=600, help="local steps per node")
    p.add_argument("--every", type=int, default=20, help="H")
    p.add_argument("--outer-lr", type=float, default=1.0)
    p.add_argument("--momentum", type=float, default=0.5)
    p.add_argument("--heavy-ball", action="store_true", help="momentum without Nesterov")
    p.add_argument("--partners", type=int, default=3)
    p.add_argument("--density", type=float, default=0.02)
    p.add_argument("--bits", type=int, default=2)
    p.add_argument("--prompts", type=int, default=8)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--eval-every", type=int, default=100)
    p.add_argument("--eval-size", type=int, default=256)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tasks", default="sum2,sum3")
    p.add_argument("--no-share", action="store_true", help="outer loop without peers (arm b)")
    p.add_argument("--plain-mean", action="store_true", help="the plain weighted mean (summaries.robust_merge off)")
    p.add_argument("--out", type=Path, default=None, help="append the result as a JSON line here")
    return p.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    policy = load_policy("bundled:tiny-policy")
    tasks = tuple(args.tasks.split(","))
    items = heldout_items(tasks, args.eval_size)
    rollout = RolloutConfig(prompts_per_step=args.prompts, samples_per_prompt=8, tasks=tasks,
                            sampling=SamplingParams(temperature=1.0, max_new_tokens=8))
    outer_cfg = OuterConfig(every_steps=args.every, outer_lr=args.outer_lr, outer_momentum=args.momentum,
                            nesterov=not args.heavy_ball, partners_per_step=args.partners,
                            compression=CompressionConfig(args.density, args.bits, 4096), robust=not args.plain_mean)
    nodes = []
    for i in range(args.nodes):
        model = copy.deepcopy(policy.model)
        trainer = Trainer(model, policy.tokenizer.pad_token_id, TrainerConfig(lr=args.lr))
        nodes.append({
            "trainer": trainer, "gen": HFGenerator(model, policy.tokenizer),
            "stream": prompt_stream(tasks, 1000 + 1000 * i + 10_000 * args.seed, 0, exclude=questions_of(items)),
            "outer": OuterLoop(model, outer_cfg, seed=i), "curve": [],
        })
    share = args.nodes > 1 and not args.no_share
    start = time.time()
    merges = 0
    for step in range(1, args.steps + 1):
        for node in nodes:
            groups = generate_groups(node["gen"], [next(node["stream"]) for _ in range(args.prompts)], rollout)
            if node["trainer"].step(groups).trained and share:
                node["outer"].add_gradient()  # the evidence peers are judged on, as in the daemon
        if share and step % args.every == 0:
            for i, node in enumerate(nodes):
                result = node["outer"].step(publish=True)
                merges += len(result.partners)
                sent = {t.name: decode_tensor(t, 4096, outer_cfg.compression.per_chunk) for t in result.tensors}
                for j, other in enumerate(nodes):
                    if j != i:
                        other["outer"].inbox.put(Received(str(i), sent, result.norm, other["outer"].clock(), time.monotonic()))
        if step % args.eval_every == 0 or step == args.steps:
            accs = [greedy_accuracy(n["gen"], items)["mean"] for n in nodes]
            for n, a in zip(nodes, accs):
                n["curve"].append((step, a))
            print(f"step {step:5d}  acc {' '.join(f'{a:.3f}' for a in accs)}  mean {sum(accs)/len(accs):.3f}"
                  f"  merges {merges}  {time.time() - start:.0f}s", flush=True)
    if args.out:
        append_run(args.out, args, curves=[n["curve"] for n in nodes], seconds=time.time() - start)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
