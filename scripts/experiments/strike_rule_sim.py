"""How often the harmful_summary strike rule strikes an honest peer whose summaries carry little
shared direction, and how soon it strikes a sign flipper: the real TrustBook (swarmnode/summaries/
trust.py), fed agreements a ~ N(mu, sigma) for one peer beside three honest ones, over many runs.
A peer's successive a follow an AR(1) series with lag-1 autocorrelation --rho (as a real peer's
do: its r keep their sign for runs of summaries; 0 draws them independently).

    .venv/bin/python scripts/experiments/strike_rule_sim.py --runs 300 --summaries 30 --rho 0.6
    .venv/bin/python scripts/experiments/strike_rule_sim.py --runs 300 --summaries 30 --rho 0

Compares the rule in trust.py with the two before it: 3 standard errors counted over n
independent r (2026-11-25 to 2026-12-02), and the mean r of the last 8, at least 6, under -0.5.
The spreads are of the bundled policy's order (a ~ +-0.02); "noisy" peers have a mean of a
tenth to a third of their spread, as honest peers do with 4 x 4 samples and H = 4.
"""
from __future__ import annotations

import argparse
import math
import random
import statistics

import swarmnode.summaries.trust as trust

PEERS = {  # name: (mean, spread) of its agreement a with this node's direction
    "honest, mean 0.3 sd": (0.006, 0.02),
    "honest, mean 0.1 sd": (0.002, 0.02),
    "coin toss": (0.0, 0.02),
    "noisy sign flip": (-0.006, 0.02),
    "steady sign flip": (-0.02, 0.004),
}
OTHERS = 3  # honest peers beside it (their |a| make the scale)


def previous_rule(recent_evidence: list[float]) -> bool:
    """The rule before: mean r of the last 8 (at least 6) under -0.5."""
    recent = recent_evidence[-8:]
    return len(recent) >= 6 and statistics.mean(recent) < -0.5


def independent_rule(recent_evidence: list[float]) -> bool:
    """The rule before: as trust.harmful, with the standard error over n, not n_eff."""
    n = len(recent_evidence)
    if n < trust.STRIKE_MIN:
        return False
    mean = statistics.mean(recent_evidence)
    return mean < trust.HARMFUL_MEAN and mean < -trust.STEADY_Z * statistics.stdev(recent_evidence) / math.sqrt(n)


def ar1_draws(rng: random.Random, mean: float, spread: float, rho: float):
    """a_k = mean + spread z_k, z_k = rho z_{k-1} + sqrt(1 - rho^2) e_k, e_k ~ N(0, 1)."""
    z = rng.gauss(0, 1)
    while True:
        yield mean + spread * z
        z = rho * z + math.sqrt(1 - rho * rho) * rng.gauss(0, 1)


def first_strike(rule, mean: float, spread: float, summaries: int, seed: int, rho: float) -> int | None:
    """The summary (1-based) at which `rule` first strikes the peer, or None."""
    rng = random.Random(seed)
    draws = ar1_draws(rng, mean, spread, rho)
    real = trust.harmful
    trust.harmful = rule
    try:
        book = trust.TrustBook(64, initial=0.2, skip_below=0.15, parameters=1_050_000)
        for k in range(summaries):
            for o in range(OTHERS):
                book.judge(f"honest{o}", rng.gauss(0.02, 0.02), bytes([o, k % 256, k // 256, 1]))
            if book.judge("peer", next(draws), bytes([k % 256, k // 256, 2])).harmful:
                return k + 1
        return None
    finally:
        trust.harmful = real


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=300, help="runs per peer and rule")
    parser.add_argument("--summaries", type=int, default=30, help="summaries judged per run")
    parser.add_argument("--rho", type=float, default=0.6, help="lag-1 autocorrelation of a peer's agreements")
    args = parser.parse_args()
    rules = {"-0.5 over 6 of 8": previous_rule, "3 SE over n": independent_rule, "3 SE over n_eff (now)": trust.harmful}
    print(f"share of {args.runs} runs of {args.summaries} summaries in which the peer is struck "
          f"(median summary of the first strike), rho {args.rho:g}")
    for peer, (mean, spread) in PEERS.items():
        cells = []
        for name, rule in rules.items():
            firsts = [first_strike(rule, mean, spread, args.summaries, seed, args.rho) for seed in range(args.runs)]
            struck = [f for f in firsts if f is not None]
            median = f", #{statistics.median(struck):.0f}" if struck else ""
            cells.append(f"{name}: {len(struck) / args.runs:6.1%}{median}")
        print(f"{peer:22s} " + " | ".join(cells))


if __name__ == "__main__":
    main()
