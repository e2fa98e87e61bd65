#!/usr/bin/env python3
"""SAPO in one process, to explore settings fast (not the headline figure).

N policies train in lock-step rounds: each generates I groups of its own (sync, the node's own
generator and Trainer), then takes J of the groups its peers generated in the last
--pool-rounds rounds, chosen by the node's real selection policy (trainer/selection.py) and
entered the way the daemon's intake enters them: rewards from this node's verifier, version
stamped on this node's clock, behaviour log-probs kept only for a peer of the same start model
(another model's text is re-scored here). Node i starts from --models[i % len] and asks its own
questions; by default the mixed swarm of scripts/experiments/sapo_experiment.py (the bundled sums policy and
tiny-sum3, on sum2 and sum3). Held-out greedy accuracy (--eval-size items per task, seed 0)
every --eval-every rounds. Every arm gets the same rounds, i.e. the same local steps.

    .venv/bin/python scripts/experiments/sapo_sim.py --split 32/0 --rounds 300
    .venv/bin/python scripts/experiments/sapo_sim.py --split 16/16 --positive-only --rounds 300
    .venv/bin/python scripts/experiments/sapo_sim.py --summarise docs/results/sapo-sim.jsonl

Prints one line per evaluation and appends one JSON line per run to --out; --summarise prints
each run's figures by start model. The daemons' experiment is scripts/experiments/sapo_experiment.py.
"""
from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import random
import sys
import time
from pathlib import Path

import torch

from swarmnode.policy import SamplingParams, load_policy
from swarmnode.policy.hf_backend import HFGenerator
from swarmnode.testing.experiments.local_runs import append_run
from swarmnode.trainer.evaluate import greedy_accuracy, heldout_items, questions_of
from swarmnode.trainer.loop import RolloutConfig, generate_groups, prompt_stream
from swarmnode.trainer.selection import select_external, update_success
from swarmnode.trainer.trainer import Trainer, TrainerConfig



def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=4)
    p.add_argument("--rounds", type=int, default=600, help="local steps per node")
    p.add_argument("--split", default="4/4", help="I/J: own and peers' groups per step")
    p.add_argument("--selection", default="nonzero_advantage")
    p.add_argument("--models", default="bundled:tiny-policy,bundled:tiny-sum3")
    p.add_argument("--tasks", default="sum2,sum3")
    p.add_argument("--foreign", default="plain", choices=["plain", "shaped"], help="objective on another model's text")
    p.add_argument("--positive-only", action="store_true", help="train only on peers' samples with positive advantage")
    p.add_argument("--pool-rounds", type=int, default=2, help="peers' groups of the last this many rounds can be drawn")
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--eval-every", type=int, default=100)
    p.add_argument("--eval-size", type=int, default=256)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", type=Path)
    p.add_argument("--summarise", type=Path, metavar="JSONL", help="print the runs in JSONL by start model; run nothing")
    return p.parse_args(argv)


def by_model(run: dict) -> dict[str, dict]:
    """Per start model, the mean over its nodes of: cumulative own reward (sum over rounds of the
    mean reward of the node's own groups) and held-out accuracy per task at the first and the
    last evaluation."""
    out: dict[str, dict] = {}
    for node in run["nodes"]:
        out.setdefault(node["model"], []).append(node)
    summary = {}
    for model, nodes in out.items():
        first = [n["curve"][0][1] for n in nodes]
        last = [n["curve"][-1][1] for n in nodes]
        summary[model] = {
            "nodes": len(nodes),
            "cumulative_reward": sum(sum(n["own_reward"]) for n in nodes) / len(nodes),
            "initial": {t: sum(c[t] for c in first) / len(nodes) for t in first[0]},
            "final": {t: sum(c[t] for c in last) / len(nodes) for t in last[0]},
        }
    return summary


def print_summary(path: Path) -> None:
    for line in path.read_text(encoding="utf-8").splitlines():
        run = json.loads(line)
        a = run["args"]
        selection = a["selection"] if not a["split"].endswith("/0") else "alone"
        variant = "".join([f"  foreign {a['foreign']}" if a.get("foreign", "plain") != "plain" else "",
                           "  positive-only" if a.get("positive_only") else ""])
        print(f"{a['split']:>5} {selection:<17} seed {a['seed']}  {a['rounds']} rounds  lr {a['lr']}{variant}")
        for model, m in by_model(run).items():
            tasks = " ".join(f"{t} {100 * m['initial'][t]:4.1f}->{100 * m['final'][t]:4.1f}" for t in m["initial"] if t != "mean")
            print(f"    {model.split('/')[-1].split(':')[-1]:<12} x{m['nodes']}  cum {m['cumulative_reward']:6.1f}  {tasks}")


def as_peer_group(group, sender: int, same_model: bool, receiver_version: int):
    """A peer's group as this node's intake would enter it (rewards agree: same verifier)."""
    return dataclasses.replace(group, source=f"peer{sender}", policy_version=receiver_version,
                               behavior_logprobs=group.behavior_logprobs if same_model else None)


def main(argv):
    args = parse_args(argv)
    if args.summarise:
        if not args.summarise.is_file():
            print(f"sapo_sim: --summarise: no such file: {args.summarise}", file=sys.stderr)
            return 2
        print_summary(args.summarise)
        return 0
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    local, external = (int(x) for x in args.split.split("/"))
    tasks = tuple(args.tasks.split(","))
    models = args.models.split(",")
    items = heldout_items(tasks, args.eval_size)
    rollout = RolloutConfig(prompts_per_step=local, samples_per_prompt=8, tasks=tasks,
                            sampling=SamplingParams(temperature=1.0, max_new_tokens=8))
    config = TrainerConfig(lr=args.lr, foreign_text_objective=args.foreign, external_positive_only=args.positive_only)
    policies = {name: load_policy(name) for name in set(models)}
    nodes = []
    for i in range(args.nodes):
        name = models[i % len(models)]
        policy = policies[name]
        model = copy.deepcopy(policy.model)
        nodes.append({
            "model": name, "trainer": Trainer(model, policy.tokenizer.pad_token_id, config),
            "gen": HFGenerator(model, policy.tokenizer), "success": {}, "rng": random.Random(args.seed * 1000 + i),
            "stream": prompt_stream(tasks, 1000 + 1000 * i + 100_000 * args.seed, 0, exclude=questions_of(items)),
            "curve": [], "own_reward": [], "external_by_task": {},
        })

    def evaluate(round_: int) -> None:
        for node in nodes:
            node["curve"].append((round_, greedy_accuracy(node["gen"], items)))
        means = [n["curve"][-1][1]["mean"] for n in nodes]
        per_node = " ".join(f"{m:.3f}" for m in means)
        print(f"round {round_:5d}  acc {per_node}  mean {sum(means) / len(means):.3f}  {time.time() - start:.0f}s", flush=True)

    start = time.time()
    evaluate(0)
    history: list[list[tuple[int, object]]] = []  # per round: (sender, group)
    for round_ in range(1, args.rounds + 1):
        made = []
        for i, node in enumerate(nodes):
            own = generate_groups(node["gen"], [next(node["stream"]) for _ in range(local)], rollout)
            for g in own:
                node["success"][g.ref.task] = update_success(node["success"].get(g.ref.task), sum(g.rewards) / g.size)
            node["own_reward"].append(sum(sum(g.rewards) for g in own) / sum(g.size for g in own))
            made.append(own)
        for i, node in enumerate(nodes):
            version = node["trainer"].version
            pool = [as_peer_group(g, j, models[j % len(models)] == node["model"], version)
                    for past in history for j, g in past if j != i] if external else []
            chosen = [pool[k] for k in select_external(pool, external, args.selection, version, {}, node["rng"],
                                                       node["success"])]
            for g in chosen:
                node["external_by_task"][g.ref.task] = node["external_by_task"].get(g.ref.task, 0) + 1
            node["trainer"].step(made[i] + chosen)
        history = (history + [[(i, g) for i, own in enumerate(made) for g in own]])[-args.pool_rounds:]
        if round_ % args.eval_every == 0 or round_ == args.rounds:
            evaluate(round_)
    if args.out:
        append_run(args.out, args, seconds=round(time.time() - start, 1),
                   nodes=[{"model": n["model"], "curve": n["curve"], "own_reward": [round(r, 4) for r in n["own_reward"]],
                           "external_by_task": n["external_by_task"]} for n in nodes])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
