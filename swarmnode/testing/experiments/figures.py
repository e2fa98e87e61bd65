"""Figures the experiment scripts share, pure: the mean of a curve's last evaluations, the spread of a
figure over seeds, an arm's curve on a common grid, a swarm's rollout latency, and the log-log
slope of a figure against the swarm's size."""
from __future__ import annotations

import math
import statistics

import numpy as np

WINDOW = 3  # evaluations averaged for a target and for steps to target


def last_mean(curve: list[list[float]]) -> float | None:
    tail = [a for _, a in curve[-WINDOW:]]
    return round(statistics.mean(tail), 4) if tail else None


def spread(values: list[float]) -> dict:
    return {"mean": round(statistics.mean(values), 4), "min": round(min(values), 4), "max": round(max(values), 4),
            "std": round(statistics.stdev(values), 4) if len(values) > 1 else 0.0, "by_seed": [round(v, 4) for v in values]}


def arm_curve(runs: list[dict], steps: int, every: int) -> dict:
    """On the grid 0, every, ..., steps (each node's evaluations interpolated onto it: they land a
    step or two late): the mean over nodes per seed, then mean / min / max over seeds."""
    grid = sorted(set(range(0, steps + 1, every)) | {steps})
    per_seed = [np.mean([np.interp(grid, *zip(*n["curve"])) for n in r["nodes"]], axis=0) for r in runs]
    cols = np.array(per_seed)
    return {"steps": grid, "mean": cols.mean(0).round(4).tolist(), "min": cols.min(0).round(4).tolist(),
            "max": cols.max(0).round(4).tolist()}


def swarm_latency_s(gossip: list[dict]) -> dict[str, float | None]:
    """Publish-to-accepted latency across the swarm from each node's rollouts status: the median
    of the nodes' p50s and the largest of their p99s (a node keeps its last 2048 samples)."""
    p50s = [g["latency_p50_s"] for g in gossip if g.get("latency_p50_s") is not None]
    p99s = [g["latency_p99_s"] for g in gossip if g.get("latency_p99_s") is not None]
    return {"latency_p50_s": round(statistics.median(p50s), 3) if p50s else None,
            "latency_p99_s": round(max(p99s), 3) if p99s else None}


def loglog_slope(points: list[tuple[float, float]]) -> float | None:
    """log(y_last / y_first) / log(x_last / x_first) over points sorted by x; None when a y is not
    positive or the x do not differ."""
    if len(points) < 2:
        return None
    (x0, y0), (x1, y1) = min(points), max(points)
    if y0 <= 0 or y1 <= 0 or x0 <= 0 or x1 == x0:
        return None
    return round(math.log(y1 / y0) / math.log(x1 / x0), 3)
