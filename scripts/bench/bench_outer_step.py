#!/usr/bin/env python3
"""CPU time of one outer step, robust merging against the plain weighted mean, in one run.

Loads a policy (the bundled one by default), and for --steps outer steps per arm, alternating
arms step by step: moves the weights as a few local steps would, puts --partners peers'
summaries in the inbox (made by the real compressor from other random deltas, decoded as the
node decodes them) and takes one OuterLoop.step (compress this node's summary, judge, merge,
move the anchor). Prints the median thread CPU ms per step of each arm and their ratio, and
what judging alone costs (both arms judge: the plain one scores peers for status): the own
direction's update, remembering the published summary (summaries/echo.py) and each partner's
echo-free agreement, timed on their own.

    .venv/bin/python scripts/bench/bench_outer_step.py
    .venv/bin/python scripts/bench/bench_outer_step.py --partners 4 --steps 40
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch

from swarmnode.policy import load_policy
from swarmnode.summaries import CompressionConfig, OuterConfig, OuterLoop, Received, compress, decode_tensor
from swarmnode.summaries.outer import global_norm


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="bundled:tiny-policy")
    p.add_argument("--partners", type=int, default=2, help="summaries merged per outer step (partners_per_step)")
    p.add_argument("--steps", type=int, default=30, help="outer steps per arm")
    return p.parse_args(argv)


def peer_summary(shapes: dict, config: CompressionConfig, generator: torch.Generator) -> dict:
    """A peer's summary as the node holds it after the checks: compressed, then decoded dense."""
    delta = {name: 1e-3 * torch.randn(shape, generator=generator) for name, shape in shapes.items()}
    residual = {name: torch.zeros(shape) for name, shape in shapes.items()}
    tensors, _, _ = compress(delta, residual, config)
    return {t.name: decode_tensor(t, config.chunk_size, config.per_chunk) for t in tensors}


def one_step(loop: OuterLoop, model: torch.nn.Module, peers: list[dict], generator: torch.Generator) -> float:
    """Thread CPU seconds of one outer step with `peers` waiting in the inbox."""
    with torch.no_grad():
        for p in model.parameters():
            p.add_(1e-3 * torch.randn(p.shape, generator=generator))
    for i, tensors in enumerate(peers):
        loop.inbox.put(Received(f"peer{i}", tensors, global_norm(tensors), loop.clock(), 0.0,
                                bytes([i, loop.clock() % 256])))
    start = time.thread_time()
    loop.step(publish=True)
    return time.thread_time() - start


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    torch.set_num_threads(1)
    generator = torch.Generator().manual_seed(0)
    compression = CompressionConfig()
    arms = {}
    for robust in (False, True):
        model = load_policy(args.model).model
        config = OuterConfig(partners_per_step=args.partners, compression=compression, robust=robust)
        arms[robust] = (OuterLoop(model, config), model)
    shapes = arms[True][0].shapes
    peers = [peer_summary(shapes, compression, generator) for _ in range(args.partners)]
    seconds: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(args.steps):
        for robust in (False, True):  # alternated: both arms see the same machine
            loop, model = arms[robust]
            seconds[robust].append(one_step(loop, model, peers, generator))
    plain, robust = (1000 * statistics.median(seconds[k]) for k in (False, True))
    loop = arms[True][0]
    direction, own_sent = loop.direction, loop.own_sent  # holds the last published summaries by now
    peer_norms = [global_norm(t) for t in peers]  # computed by the checks, before the outer step
    judging = []
    for _ in range(args.steps):
        start = time.thread_time()
        for name, d in direction.items():
            d.mul_(loop.direction_decay).add_(peers[0][name])
        own_sent.add(peers[-1])  # stands in for this node's own published summary
        direction_norm = global_norm(direction)
        own_on_direction = own_sent.on(own_sent.flat(direction))
        for tensors, n in zip(peers, peer_norms):
            own_sent.agreement(tensors, n, direction, direction_norm, own_on_direction)
        judging.append(time.thread_time() - start)
    judge = 1000 * statistics.median(judging)
    params = sum(torch.Size(s).numel() for s in shapes.values())
    print(f"{args.model}: {params / 1e6:.2f}M parameters, {args.partners} partners, {args.steps} outer steps per arm")
    print(f"  plain weighted mean  {plain:7.1f} ms CPU per outer step (median)")
    print(f"  robust merging       {robust:7.1f} ms CPU per outer step (median)")
    print(f"  robust / plain       {robust / plain:7.2f}x")
    print(f"  judging (in both)    {judge:7.1f} ms CPU per outer step: {judge / robust:.1%} of the robust step")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
