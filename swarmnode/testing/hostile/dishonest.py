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
    turncoat:k    honest for TURN_AFTER summaries (it earns trust), then -k x the summary it
                  would have sent (its error feedback stays honest, so every summary after the
                  turn is a whole honest one flipped, none half made of what it held back)
    turncoat:k@s  honest until s seconds after the process started, then as turncoat:k
    collude:k     one fixed random direction (seeded by COLLUDE_SEED: every colluder pushes the
                  same one) at k x its honest norm, every summary
    replay        its REPLAY_FROM-th honest summary, re-signed under a new id, forever
    echo          the latest summary it received from one peer (the victim, whose node home
                  SWARMNODE_ECHO_HOME names), sent back as its own; honest until the first arrives

A turncoat prints `[dishonest] turned at <unix time>, summary <n>` when it turns, so that an
experiment can find the moment in its console.

The bend runs where the summary is compressed (OuterLoop.step calls `compress`), so the error
feedback, sealing, announcement and serving are the daemon's own; an echo sees what arrives
where checked summaries enter the inbox (SummaryInbox.put).
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, NamedTuple

import torch
from torch import Tensor

from swarmnode.home import NodeHome, read_runtime
from swarmnode.summaries import state as outer_state
from swarmnode.summaries.outer import global_norm

ATTACKS = ("sign_flip", "random", "alie", "turncoat", "collude", "replay", "echo")
TURN_AFTER = 6  # honest summaries a turncoat sends first (turncoat:k without @seconds)
REPLAY_FROM = 2  # the honest summary a replayer sends forever (its 2nd: the 1st is of the first H steps)
COLLUDE_SEED = 4242
ALIE_SHARE = 0.01
ECHO_HOME_VARIABLE = "SWARMNODE_ECHO_HOME"

Tensors = dict[str, Tensor]


class Bend(NamedTuple):
    """A parsed SWARMNODE_BEND."""

    attack: str
    k: float
    turn_after_s: float | None = None  # turncoat:k@s: seconds after the start when it turns


def _number(text: str, part: str, what: str) -> float:
    try:
        return float(part)
    except ValueError:
        raise ValueError(f"SWARMNODE_BEND={text!r}: {part!r} is not a number ({what})") from None


def parse_bend(text: str) -> Bend:
    """'sign_flip:8' -> ('sign_flip', 8.0, None); 'replay' -> ('replay', 1.0, None);
    'turncoat:3@90' -> ('turncoat', 3.0, 90.0). Raises ValueError."""
    spec, at, after = text.partition("@")
    name, _, k = spec.partition(":")
    if name not in ATTACKS:
        raise ValueError(f"SWARMNODE_BEND={text!r}: the attack is one of {', '.join(ATTACKS)}")
    if at and name != "turncoat":
        raise ValueError(f"SWARMNODE_BEND={text!r}: only a turncoat takes @<seconds> (turncoat:k@s)")
    turn_after_s = _number(text, after, "the seconds before it turns") if at else None
    if turn_after_s is not None and turn_after_s < 0:
        raise ValueError(f"SWARMNODE_BEND={text!r}: the seconds before it turns must be 0 or more")
    return Bend(name, _number(text, k, "the scale k") if k else 1.0, turn_after_s)


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


def _no_peer() -> str | None:
    return None


def _ignore_turn(at: float, summary: int) -> None:
    pass


@dataclass
class Bender:
    """Turns each honest pseudo-gradient into what the attack sends."""

    attack: str
    k: float
    turn_after_s: float | None = None  # a turncoat's turn: seconds after it was made (else TURN_AFTER summaries)
    clock: Callable[[], float] = time.time
    on_turn: Callable[[float, int], None] = _ignore_turn  # (when, the first bent summary's number)
    echo_peer: Callable[[], str | None] = _no_peer  # an echo's victim's peer id (None: not known yet)
    made: int = 0  # summaries made so far
    turned_at: float | None = None
    started_at: float = field(init=False)
    _echo: Tensors | None = None  # the victim's latest summary, decoded
    _replay: tuple | None = None
    _rng: torch.Generator = field(default_factory=lambda: torch.Generator().manual_seed(int.from_bytes(os.urandom(4), "big")))

    def __post_init__(self):
        self.started_at = self.clock()

    def turned(self) -> bool:
        """Whether this summary (the `made`-th) is a turned turncoat's; notes the moment it turns."""
        if self.attack != "turncoat":
            return False
        if self.turned_at is None:
            now = self.clock()
            due = (self.made > TURN_AFTER if self.turn_after_s is None
                   else now - self.started_at >= self.turn_after_s)
            if not due:
                return False
            self.turned_at = now
            self.on_turn(now, self.made)
        return True

    def flipped(self, tensors: Tensors) -> Tensors:
        """-k x tensors: a sign flip's summary, and a turned turncoat's."""
        return {name: -self.k * t for name, t in tensors.items()}

    def bend(self, own: Tensors) -> Tensors:
        self.made += 1
        honest_norm = global_norm(own)
        if self.attack == "sign_flip":
            return self.flipped(own)
        if self.attack == "random":
            return scaled_to(random_direction(own, self._rng), self.k * honest_norm)
        if self.attack == "collude":
            return scaled_to(random_direction(own, torch.Generator().manual_seed(COLLUDE_SEED)), self.k * honest_norm)
        if self.attack == "alie":
            bias = alie_bias(own, self.k, torch.Generator().manual_seed(COLLUDE_SEED))
            return {name: t + bias[name] for name, t in own.items()}
        return own  # turncoat, replay and echo (handled in `compress`)

    def receive(self, item: outer_state.Received) -> None:
        """A checked summary entering the inbox (gossip threads): an echo keeps its victim's latest."""
        if self.attack == "echo" and item.peer == self.echo_peer():
            self._echo = item.tensors  # one reference swap: atomic for the trainer thread's read

    def compress(self, real_compress, own: Tensors, residual: Tensors, config):
        """OuterLoop.step's `compress`, bent."""
        if self.attack == "replay" and self._replay is not None:
            tensors, sent = self._replay
            return tensors, sent, residual
        echo = self._echo
        if echo is not None:
            self.made += 1
            # A zero residual of its own: the victim's sparse values compress back to themselves.
            tensors, sent, _ = real_compress(echo, {}, config)
            return tensors, sent, residual
        if self.attack == "turncoat":
            return self._turncoat(real_compress, own, residual, config)
        result = real_compress(self.bend(own), residual, config)
        if self.attack == "replay" and self.made == REPLAY_FROM:
            self._replay = (result[0], result[1])
        return result

    def _turncoat(self, real_compress, own: Tensors, residual: Tensors, config):
        """Its honest summary, or after the turn -k x it (recompressed from its own sparse values,
        which compress back to themselves), with the honest error feedback kept either way."""
        self.made += 1
        tensors, sent, kept = real_compress(own, residual, config)
        if not self.turned():
            return tensors, sent, kept
        flipped, flipped_sent, _ = real_compress(self.flipped(sent), {}, config)
        return flipped, flipped_sent, kept


def echo_home(environ: Mapping[str, str]) -> Path:
    """The victim's node home an echo reads its peer id from. Raises ValueError."""
    text = environ.get(ECHO_HOME_VARIABLE, "")
    if not text:
        raise ValueError(f"{ECHO_HOME_VARIABLE} is not set: an echo needs the victim's node home "
                         f"({ECHO_HOME_VARIABLE}=<its --home>)")
    if not Path(text).is_dir():
        raise ValueError(f"{ECHO_HOME_VARIABLE}={text!r} is not a folder: set it to the victim's node home "
                         "(its --home)")
    return Path(text)


def peer_id_reader(home: Path) -> Callable[[], str | None]:
    """The peer id in `home`'s runtime file, read when asked until it is there (the victim may
    not have started yet), then kept: a home's identity does not change."""
    known: list[str] = []

    def peer_id() -> str | None:
        if not known:
            found = read_runtime(NodeHome(home)).get("peer_id")
            if not isinstance(found, str):
                return None
            known.append(found)
        return known[0]

    return peer_id


def print_turn(at: float, summary: int) -> None:
    print(f"[dishonest] turned at {at:.3f}, summary {summary}", flush=True)


def install(text: str, environ: Mapping[str, str] = os.environ, clock: Callable[[], float] = time.time,
            on_turn: Callable[[float, int], None] = print_turn) -> Bender:
    """Bend every summary this process's outer loop makes from now on. Raises ValueError."""
    bend = parse_bend(text)
    victim = peer_id_reader(echo_home(environ)) if bend.attack == "echo" else _no_peer
    bender = Bender(bend.attack, bend.k, bend.turn_after_s, clock=clock, on_turn=on_turn, echo_peer=victim)
    real = outer_state.compress
    outer_state.compress = lambda own, residual, config: bender.compress(real, own, residual, config)
    if bend.attack == "echo":
        real_put = outer_state.SummaryInbox.put

        def put(inbox: outer_state.SummaryInbox, item: outer_state.Received) -> None:
            bender.receive(item)
            real_put(inbox, item)

        outer_state.SummaryInbox.put = put
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
