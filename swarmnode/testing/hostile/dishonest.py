"""A dishonest same-base peer: the project's own daemon with one thing bent, its gradient summaries.

    SWARMNODE_BEND=sign_flip:8 python -m swarmnode.testing.hostile.dishonest run --home H --config C ...

runs `swarmnode run` unchanged (real identity, real p2pd, real training, the real protocol, every
message well-formed and signed) except that each summary it publishes is made from a bent
pseudo-gradient instead of its honest one. Its own training, anchor and merges stay honest: it
keeps a real, learning model to lie about. SWARMNODE_BEND is `<attack>[:<k>]`:

    sign_flip:k   -k x its honest delta                    (k from 1 up to just under the norm bound)
    random:k      a fresh random direction, k x its honest norm
    alie:z        its honest delta plus z x the spread (std) of its values on a fixed 1% of the
                  coordinates, in a fixed sign pattern: a small consistent bias inside the spread
                  of honest updates ("a little is enough"); the residual carries it until sent
    turncoat:k    honest for TURN_AFTER summaries (it earns trust), then sign_flip:k
    collude:k     one fixed random direction (seeded by COLLUDE_SEED: every colluder pushes the
                  same one) at k x its honest norm, every summary
    replay        its REPLAY_FROM-th honest summary, re-signed under a new id, forever

The bend runs where the summary is compressed (OuterLoop.step calls `compress`), so the error
feedback, sealing, announcement and serving are the daemon's own.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

import torch
from torch import Tensor

from swarmnode.summaries import state as outer_state
from swarmnode.summaries.outer import global_norm

ATTACKS = ("sign_flip", "random", "alie", "turncoat", "collude", "replay")
TURN_AFTER = 6  # honest summaries a turncoat sends first
REPLAY_FROM = 2  # the honest summary a replayer sends forever (its 2nd: the 1st is of the first H steps)
COLLUDE_SEED = 4242
ALIE_SHARE = 0.01

Tensors = dict[str, Tensor]


def parse_bend(text: str) -> tuple[str, float]:
    """'sign_flip:8' -> ('sign_flip', 8.0); 'replay' -> ('replay', 1.0). Raises ValueError."""
    name, _, k = text.partition(":")
    if name not in ATTACKS:
        raise ValueError(f"SWARMNODE_BEND={text!r}: the attack is one of {', '.join(ATTACKS)}")
    try:
        return name, float(k) if k else 1.0
    except ValueError:
        raise ValueError(f"SWARMNODE_BEND={text!r}: {k!r} is not a number") from None


def scaled_to(direction: Tensors, target_norm: float) -> Tensors:
    """direction x target_norm / |direction|."""
    n = global_norm(direction)
    return {name: t * (target_norm / n if n > 0 else 0.0) for name, t in direction.items()}


def random_direction(like: Tensors, generator: torch.Generator) -> Tensors:
    return {name: torch.randn(t.shape, generator=generator) for name, t in like.items()}


def alie_bias(own: Tensors, z: float, generator: torch.Generator) -> Tensors:
    """z x std(own's values) on a fixed ALIE_SHARE of each tensor's coordinates, fixed signs."""
    out = {}
    for name, t in own.items():
        mask = (torch.rand(t.shape, generator=generator) < ALIE_SHARE).float()
        signs = torch.randint(0, 2, t.shape, generator=generator).float() * 2 - 1
        out[name] = z * float(t.float().std()) * mask * signs if t.numel() > 1 else torch.zeros_like(t)
    return out


@dataclass
class Bender:
    """Turns each honest pseudo-gradient into what the attack sends."""

    attack: str
    k: float
    made: int = 0  # summaries made so far
    _replay: tuple | None = None
    _rng: torch.Generator = field(default_factory=lambda: torch.Generator().manual_seed(int.from_bytes(os.urandom(4), "big")))

    def bend(self, own: Tensors) -> Tensors:
        self.made += 1
        honest_norm = global_norm(own)
        if self.attack == "sign_flip" or (self.attack == "turncoat" and self.made > TURN_AFTER):
            return {name: -self.k * t for name, t in own.items()}
        if self.attack == "random":
            return scaled_to(random_direction(own, self._rng), self.k * honest_norm)
        if self.attack == "collude":
            return scaled_to(random_direction(own, torch.Generator().manual_seed(COLLUDE_SEED)), self.k * honest_norm)
        if self.attack == "alie":
            bias = alie_bias(own, self.k, torch.Generator().manual_seed(COLLUDE_SEED))
            return {name: t + bias[name] for name, t in own.items()}
        return own  # turncoat before it turns; replay (handled in `compress`)

    def compress(self, real_compress, own: Tensors, residual: Tensors, config):
        """OuterLoop.step's `compress`, bent."""
        if self.attack == "replay" and self._replay is not None:
            tensors, sent = self._replay
            return tensors, sent, residual
        result = real_compress(self.bend(own), residual, config)
        if self.attack == "replay" and self.made == REPLAY_FROM:
            self._replay = (result[0], result[1])
        return result


def install(text: str) -> Bender:
    """Bend every summary this process's outer loop makes from now on."""
    attack, k = parse_bend(text)
    bender = Bender(attack, k)
    real = outer_state.compress
    outer_state.compress = lambda own, residual, config: bender.compress(real, own, residual, config)
    return bender


def main(argv: list[str]) -> int:
    text = os.environ.get("SWARMNODE_BEND", "")
    try:
        install(text)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    from swarmnode.cli.app import main as cli_main

    print(f"[dishonest] every summary bent: {text}", flush=True)
    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
