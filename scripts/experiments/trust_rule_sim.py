"""How the earned-trust rule treats honest peers, sign flippers and turncoats when honest
summaries share much direction and when they share little: the real TrustBook (swarmnode/
summaries/trust.py) fed evidence r ~ clamp(N(mean, sd), -1, 1) over many runs.

    .venv/bin/python scripts/experiments/trust_rule_sim.py --runs 300 --summaries 30

"little" is r like an honest peer's at 4 prompts x 4 samples, H = 4 (trust_sim.py measured a
mean evidence of +0.16 to +0.59 over 6 seeds), "much" like one at 8 x 8, H = 20. The flipper
sends each honest summary negated (its r is the honest r negated, as in trust_sim.py); the
turncoat is honest for --turn-after summaries, then flips; the random peer's r has mean 0.
Prints, per regime, the share of the honest peer's summaries merged, how many of the flipper's
and the turncoat's post-turn summaries were merged and at what summed trust, and strikes.
"""
from __future__ import annotations

import argparse
import random
import sys

from swarmnode.summaries.trust import TrustBook

SCALE = 0.06  # the agreement scale the other peers' votes hold (r = a / SCALE)
REGIMES = {  # name: (mean, sd) of an honest peer's r before clamping
    "little +0.16": (0.16, 1.0),
    "little +0.36": (0.36, 1.0),
    "little +0.59": (0.59, 1.0),
    "much   +0.80": (0.8, 0.3),
}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=300)
    p.add_argument("--summaries", type=int, default=30, help="summaries judged per peer and run")
    p.add_argument("--turn-after", type=int, default=15, help="the turncoat's honest summaries")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def new_book() -> TrustBook:
    book = TrustBook(64, initial=0.2, skip_below=0.15, parameters=10**6)
    book.restore_votes({f"other{i}": SCALE for i in range(31)})  # keeps the scale at SCALE
    return book


def judged(book: TrustBook, peer: str, evidence: list[float]) -> list:
    return [book.judge(peer, r * SCALE, i.to_bytes(4, "big")) for i, r in enumerate(evidence)]


def clamped_draws(rng: random.Random, mean: float, sd: float, n: int) -> list[float]:
    """n draws of clamp(N(mean, sd), -1, 1): evidence r as TrustBook sees it."""
    return [max(-1.0, min(1.0, rng.gauss(mean, sd))) for _ in range(n)]


def one_run(rng: random.Random, mean: float, sd: float, args) -> dict:
    honest = clamped_draws(rng, mean, sd, args.summaries)
    turncoat = clamped_draws(rng, mean, sd, args.summaries)
    turncoat = turncoat[:args.turn_after] + [-r for r in turncoat[args.turn_after:]]
    noise = clamped_draws(rng, 0.0, sd, args.summaries)
    book = new_book()
    out = {}
    for name, evidence in (("honest", honest), ("flipper", [-r for r in honest]), ("turncoat", turncoat),
                           ("random", noise)):
        verdicts = judged(book, name, evidence)
        if name == "turncoat":
            verdicts = verdicts[args.turn_after:]
        merged = [v for v in verdicts if v.skipped is None]
        out[name] = (len(merged), sum(v.trust for v in merged), sum(v.harmful for v in verdicts), len(verdicts))
    return out


def main(argv) -> int:
    args = parse_args(argv)
    rng = random.Random(args.seed)
    print(f"{args.runs} runs of {args.summaries} summaries; turncoat flips after {args.turn_after}")
    print(" honest r        honest merged  struck |  flipper merged (trust)  |  turncoat merged (trust)"
          "  |  random merged")
    for regime, (mean, sd) in REGIMES.items():
        runs = [one_run(rng, mean, sd, args) for _ in range(args.runs)]

        def avg(peer, i):
            return sum(r[peer][i] for r in runs) / len(runs)
        print(f" {regime}   {avg('honest', 0) / args.summaries:6.0%} {avg('honest', 2):9.2f} | "
              f"{avg('flipper', 0):5.1f} of {args.summaries} ({avg('flipper', 1):4.2f})     | "
              f"{avg('turncoat', 0):5.2f} of {args.summaries - args.turn_after} ({avg('turncoat', 1):4.2f})"
              f"      | {avg('random', 0) / args.summaries:5.0%}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
