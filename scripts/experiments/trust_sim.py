#!/usr/bin/env python3
"""Earned trust in one process: is an honest peer ever struck, is a sign flipper caught?

Two copies of the bundled policy train in turn, each on its own questions, and every H local
steps run the node's real OuterLoop (compress, judge, merge, step the anchor) and trade
summaries. A third sender, the flipper, sends the honest peer's summary negated and scaled
(--flip): node0 judges both. What node0 made of each (mean evidence r, strikes, merges, trust)
is printed per seed, with p, node0's own persistence: the median cos of its fresh
pseudo-gradient with its direction so far (summaries/trust.py judges peers against that
direction). Fast (seconds per run at H = 4), for exploring the rule, not a headline:

    .venv/bin/python scripts/experiments/trust_sim.py --seeds 0 1 2 3 4 5
    .venv/bin/python scripts/experiments/trust_sim.py --seeds 0 1 --every 20 --prompts 8 --samples 8 --steps 300
"""
from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
from pathlib import Path

import torch

from swarmnode.policy import SamplingParams, load_policy
from swarmnode.policy.hf_backend import HFGenerator
from swarmnode.summaries import CompressionConfig, OuterConfig, OuterLoop, Received, cosine, decode_tensor
from swarmnode.summaries.outer import pseudo_gradient
from swarmnode.trainer.loop import RolloutConfig, generate_groups, prompt_stream
from swarmnode.trainer.trainer import Trainer, TrainerConfig


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--steps", type=int, default=80, help="local steps per node")
    p.add_argument("--every", type=int, default=4, help="H")
    p.add_argument("--prompts", type=int, default=4)
    p.add_argument("--samples", type=int, default=4)
    p.add_argument("--flip", type=float, default=8.0, help="the flipper sends -flip x the honest summary (0: none)")
    p.add_argument("--outer-momentum", type=float, default=OuterConfig.outer_momentum,
                   help="the outer optimizer's momentum (the node's default; 0: plain outer SGD)")
    p.add_argument("--out", type=Path, default=None, help="append each seed's result as a JSON line here")
    return p.parse_args(argv)


def node(policy, outer_cfg: OuterConfig, index: int, seed: int, tasks) -> dict:
    model = copy.deepcopy(policy.model)
    return {"trainer": Trainer(model, policy.tokenizer.pad_token_id, TrainerConfig()),
            "gen": HFGenerator(model, policy.tokenizer), "outer": OuterLoop(model, outer_cfg, seed=index),
            "stream": prompt_stream(tasks, 1000 + 1000 * index + 10_000 * seed, 0)}


def run_seed(policy, args, seed: int) -> dict:
    """node0's verdicts on the honest peer and on the flipper over one run."""
    torch.manual_seed(seed)
    tasks = ("sum2", "sum3")
    rollout = RolloutConfig(prompts_per_step=args.prompts, samples_per_prompt=args.samples, tasks=tasks,
                            sampling=SamplingParams(temperature=1.0, max_new_tokens=8))
    cfg = OuterConfig(every_steps=args.every, compression=CompressionConfig(0.02, 2, 4096),
                      outer_momentum=args.outer_momentum)
    nodes = [node(policy, cfg, i, seed, tasks) for i in range(2)]
    verdicts, persistence = [], []
    for step in range(1, args.steps + 1):
        for n in nodes:
            if n["trainer"].step(generate_groups(n["gen"], [next(n["stream"]) for _ in range(args.prompts)], rollout)).trained:
                n["outer"].add_gradient()  # as the daemon's OuterSteps does: the evidence peers are judged on
        if step % args.every:
            continue
        sent = []
        outer0 = nodes[0]["outer"]
        own0 = pseudo_gradient(outer0.anchor, {name: p.detach() for name, p in outer0.params.items()})
        if step > args.every:  # cos(own_t, D_{t-1}): how much node0's fresh delta repeats its direction
            persistence.append(cosine(own0, outer0.direction))
        for i, n in enumerate(nodes):
            result = n["outer"].step(publish=True)
            sent.append(({t.name: decode_tensor(t, 4096, cfg.compression.per_chunk) for t in result.tensors}, result.norm))
            if i == 0:
                verdicts += result.verdicts
        victim, honest = nodes[0]["outer"], nodes[1]["outer"]
        victim.inbox.put(Received("honest", sent[1][0], sent[1][1], victim.clock(), time.monotonic()))
        honest.inbox.put(Received("node0", sent[0][0], sent[0][1], honest.clock(), time.monotonic()))
        if args.flip:
            flipped = {name: -args.flip * t for name, t in sent[1][0].items()}
            victim.inbox.put(Received("flipper", flipped, sent[1][1] * args.flip, victim.clock(), time.monotonic()))
    result = {"seed": seed, "own_persistence": round(statistics.median(persistence), 3) if persistence else None}
    for peer in ("honest", "flipper"):
        mine = [v for v in verdicts if v.peer == peer]
        if mine:
            result[peer] = {"judged": len(mine), "mean_r": round(sum(v.evidence for v in mine) / len(mine), 3),
                            "struck": sum(v.harmful for v in mine), "merged": sum(v.skipped is None for v in mine),
                            "max_trust": round(max(v.trust for v in mine), 2), "last_trust": round(mine[-1].trust, 2)}
    return result


def main(argv) -> int:
    args = parse_args(argv)
    policy = load_policy("bundled:tiny-policy")
    print(f"H={args.every} {args.prompts}x{args.samples} {args.steps} steps, flip {args.flip:g}x, "
          f"outer momentum {args.outer_momentum:g}")
    print(" seed  p     honest: r  struck merged trust   flipper: r  struck merged max trust")
    for seed in args.seeds:
        r = run_seed(policy, args, seed)
        h, f = r["honest"], r.get("flipper", {})
        print(f" {seed:4d}  {r['own_persistence']:.2f}  {h['mean_r']:+6.2f} {h['struck']:6d} {h['merged']:6d} "
              f"{h['last_trust']:5.2f}   {f.get('mean_r', 0):+6.2f} {f.get('struck', 0):6d} {f.get('merged', 0):6d} "
              f"{f.get('max_trust', 0):5.2f}", flush=True)
        if args.out:
            with open(args.out, "a", encoding="utf-8") as out:
                out.write(json.dumps({"args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
                                      **r}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
