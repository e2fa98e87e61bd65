"""scripts/experiments/heterogeneity_experiment.py's results: recorded runs -> docs/results/heterogeneity.json.

Pure functions over the runs the experiment recorded (no daemons, no files here), so the JSON
can be rebuilt from <root>/runs.json. A run is {"arm", "seed", "budget_s", "nodes": [node
record]}; a node record carries at least "node", "slowdown", "peer_id", "curve" ([[seconds since
the run's clock started, held-out mean accuracy], ...] in time order) and the status figures the
experiment copied (any of them may be None: a node of an older version does not report them).

Spread over seeds is ± half the range (max - min) / 2, as in sapo_results.
"""
from __future__ import annotations

import statistics
from typing import Iterable

WINDOW = 2  # evaluations averaged by the time-to-target criterion
SWEEP_GAINS = (0.05, 0.075, 0.10, 0.125, 0.15)  # targets beside the headline one: start + each gain
RATIO_GOAL = 0.7  # scheduler / fixed swarm time to target, at most
SHARE_GOAL = 0.5  # slowest / fastest node's trained share, at least


def mean(values: Iterable) -> float | None:
    """Arithmetic mean of the values that are not None (None when none is)."""
    values = [v for v in values if v is not None]
    return round(statistics.mean(values), 4) if values else None


def half_range(values: Iterable) -> float | None:
    """(max - min) / 2 of the values that are not None; 0 for one value, None for none."""
    values = [v for v in values if v is not None]
    if not values:
        return None
    return round((max(values) - min(values)) / 2, 4)


def spread(values: list) -> dict:
    """{"mean", "half_range", "by_seed"} of per-seed values (None entries kept in by_seed, left
    out of mean and half_range)."""
    return {"mean": mean(values), "half_range": half_range(values), "by_seed": list(values)}


# -- time to target ------------------------------------------------------------------------------

def time_to_target(curve: list, target: float | None, window: int = WINDOW) -> float | None:
    """The first evaluation time t_i at which the mean of the last `window` evaluations,
    (a_{i-window+1} + ... + a_i) / window, is >= target; None if it never is (or no target).

    A single lucky evaluation does not count: with window 2 the evaluation at t_i and the one
    before it must average to the target. The mean is rounded to 4 decimals before comparing
    (as accuracies are recorded), so a target equal to a rounded mean counts as reached."""
    if target is None:
        return None
    for i in range(window - 1, len(curve)):
        smoothed = statistics.mean(a for _, a in curve[i - window + 1: i + 1])
        if round(smoothed, 4) >= round(target, 4):
            return curve[i][0]
    return None


def swarm_time_to_target(node_times: list) -> float | None:
    """max_k t_k over the nodes' times to target: the swarm reached the target when its last
    node did. None if any node never reached it (or there are no nodes)."""
    if not node_times or any(t is None for t in node_times):
        return None
    return max(node_times)


def initial_accuracy(curve: list) -> float | None:
    """The first evaluation's accuracy (version 0, before any training step)."""
    return curve[0][1] if curve else None


def final_accuracy(curve: list, window: int = WINDOW) -> float | None:
    """Mean of the last `window` evaluations."""
    return mean(a for _, a in curve[-window:]) if curve else None


def default_target(runs: list[dict], gain: float) -> float | None:
    """mean over every node of every run of its initial accuracy, + gain (absolute accuracy)."""
    start = mean(initial_accuracy(n["curve"]) for r in runs for n in r["nodes"])
    return None if start is None else round(start + gain, 4)


def seed_ratio(scheduler_s: float | None, fixed_s: float | None, budget_s: float) -> dict:
    """One seed's time_to_target_ratio = scheduler swarm time / fixed swarm time.

    A fixed run that never reached the target counts as its budget: that time is a lower
    bound, so the ratio is an upper bound ("upper_bound": true). A scheduler run that never
    reached it has no ratio (None): nothing bounds it from above."""
    fixed_lower_bound = fixed_s is None
    denominator = budget_s if fixed_lower_bound else fixed_s
    ratio = None if scheduler_s is None or not denominator else round(scheduler_s / denominator, 4)
    return {"ratio": ratio, "scheduler_s": scheduler_s, "fixed_s": fixed_s,
            "fixed_never_reached": fixed_lower_bound, "upper_bound": fixed_lower_bound and ratio is not None}


def seed_ratios(swarm_s: dict[tuple[str, int], tuple[float | None, float]], seeds: list[int]) -> dict[str, dict]:
    """{str(seed): seed_ratio} for each seed with both a "scheduler" and a "fixed" run, from
    swarm_s[(arm, seed)] = (that run's swarm time to target, its budget)."""
    return {str(s): seed_ratio(swarm_s[("scheduler", s)][0], swarm_s[("fixed", s)][0], swarm_s[("fixed", s)][1])
            for s in seeds if ("scheduler", s) in swarm_s and ("fixed", s) in swarm_s}


def mean_ratio(per_seed: list[dict]) -> dict:
    """Mean over seeds of the per-seed ratios, ± half range. None when any seed has no ratio
    (its scheduler run never reached the target): a mean over the other seeds would flatter it.
    An upper bound when any seed's is."""
    ratios = [s["ratio"] for s in per_seed]
    whole = bool(ratios) and all(r is not None for r in ratios)
    return {"mean": mean(ratios) if whole else None, "half_range": half_range(ratios) if whole else None,
            "by_seed": ratios, "upper_bound": whole and any(s["upper_bound"] for s in per_seed)}


# -- who trains whose groups ---------------------------------------------------------------------

def share_trained(nodes: list[dict]) -> list[float | None]:
    """For each node k: share_k = sum over the other nodes j of external_trained_by_sender_j
    [peer_id_k] / groups_generated_k, the share of k's generated groups that peers trained on
    (it can pass 1: several peers may train the same group).

    None for node k when it reports no groups_generated (or 0), has no peer_id, or no node
    reports external_trained_by_sender; a node whose dict is None adds 0."""
    reported = any(n.get("external_trained_by_sender") is not None for n in nodes)
    out = []
    for k, node in enumerate(nodes):
        generated, peer = node.get("groups_generated"), node.get("peer_id")
        if not reported or not generated or not peer:
            out.append(None)
            continue
        trained = sum((other.get("external_trained_by_sender") or {}).get(peer, 0)
                      for j, other in enumerate(nodes) if j != k)
        out.append(round(trained / generated, 4))
    return out


def slow_fast_share_ratio(shares: list, slowdowns: list[float]) -> float | None:
    """mean share of the slowest nodes / mean share of the fastest nodes, where the slowest
    nodes are those at max(slowdowns) and the fastest those at min(slowdowns) (1,2,4,4: nodes 2
    and 3 against node 0). None if a share is missing there, the fastest share is 0, or every
    node runs at the same slowdown."""
    if not shares or len(shares) != len(slowdowns) or max(slowdowns) == min(slowdowns):
        return None
    slow = [s for s, x in zip(shares, slowdowns) if x == max(slowdowns)]
    fast = [s for s, x in zip(shares, slowdowns) if x == min(slowdowns)]
    if any(s is None for s in slow + fast) or statistics.mean(fast) == 0:
        return None
    return round(statistics.mean(slow) / statistics.mean(fast), 4)


# -- staleness, idle, bytes ----------------------------------------------------------------------

def merge_counts(histograms: Iterable) -> dict[str, int]:
    """Sum of {str(tau): groups} histograms (None skipped), keys in tau order."""
    total: dict[int, int] = {}
    for h in histograms:
        for tau, count in (h or {}).items():
            total[int(tau)] = total.get(int(tau), 0) + int(count)
    return {str(tau): total[tau] for tau in sorted(total)}


def staleness_summary(histogram: dict[str, int]) -> dict:
    """The histogram, its shares (count_tau / sum of counts) and mean tau = sum(tau * count_tau)
    / sum(count_tau); shares and mean None for an empty histogram."""
    groups = sum(histogram.values())
    return {"counts": histogram, "groups": groups,
            "shares": {tau: round(c / groups, 4) for tau, c in histogram.items()} if groups else None,
            "mean_tau": round(sum(int(tau) * c for tau, c in histogram.items()) / groups, 4) if groups else None}


def wire_bytes(nodes: list[dict]) -> int | None:
    """Rollout bytes on the wire in a run: sum over nodes of bytes_fetched (each batch a node
    fetched crossed the wire once, from its sender). None if no node reports it."""
    values = [n.get("bytes_fetched") for n in nodes if n.get("bytes_fetched") is not None]
    return sum(values) if values else None


# -- runs, arms, the whole -----------------------------------------------------------------------

def run_summary(run: dict, target: float | None) -> dict:
    """One run (one arm, one seed): per-node time to target, trained share and the run's totals.
    Adds "time_to_target_s", "initial_accuracy", "final_accuracy", "share_trained" to each node
    record (a copy)."""
    nodes = [dict(n) for n in run["nodes"]]
    shares = share_trained(nodes)
    for n, share in zip(nodes, shares):
        n.update(time_to_target_s=time_to_target(n["curve"], target), initial_accuracy=initial_accuracy(n["curve"]),
                 final_accuracy=final_accuracy(n["curve"]), share_trained=share)
    slowdowns = [n["slowdown"] for n in nodes]
    wire = wire_bytes(nodes)
    budget = run.get("budget_s")
    return {
        "arm": run["arm"], "seed": run["seed"], "budget_s": budget, "seconds": run.get("seconds"),
        "swarm_time_to_target_s": swarm_time_to_target([n["time_to_target_s"] for n in nodes]),
        "never_reached": [n["node"] for n in nodes if n["time_to_target_s"] is None],
        "final_accuracy_mean": mean(n["final_accuracy"] for n in nodes),
        "slow_fast_share_ratio": slow_fast_share_ratio(shares, slowdowns),
        "generator_idle_share_mean": mean(n.get("generator_idle_share") for n in nodes),
        "trainer_idle_share_mean": mean(n.get("trainer_idle_share") for n in nodes),
        "staleness_local": staleness_summary(merge_counts(n.get("staleness_local") for n in nodes)),
        "staleness_external": staleness_summary(merge_counts(n.get("staleness_external") for n in nodes)),
        "wire_bytes": wire,
        "wire_bytes_per_s": round(wire / budget, 2) if wire is not None and budget else None,
        "nodes": nodes,
    }


def per_node_over_seeds(runs: list[dict]) -> list[dict]:
    """Node i (same slowdown in every seed) over an arm's seeds: each figure's mean ± half range."""
    out = []
    for i in range(len(runs[0]["nodes"])):
        mine = [r["nodes"][i] for r in runs]
        row = {"node": i, "slowdown": mine[0]["slowdown"], "cpu_quota": mine[0].get("cpu_quota")}
        for key in ("time_to_target_s", "final_accuracy", "share_trained", "steps", "groups_generated",
                    "generator_idle_share", "trainer_idle_share", "bytes_fetched"):
            row[key] = spread([n.get(key) for n in mine])
        out.append(row)
    return out


def arm_summary(runs: list[dict]) -> dict:
    """An arm's run summaries (seed order) -> per-seed figures and their mean ± half range."""
    return {
        "seeds": [r["seed"] for r in runs],
        "swarm_time_to_target_s": spread([r["swarm_time_to_target_s"] for r in runs]),
        "final_accuracy_mean": spread([r["final_accuracy_mean"] for r in runs]),
        "slow_fast_share_ratio": spread([r["slow_fast_share_ratio"] for r in runs]),
        "generator_idle_share": spread([r["generator_idle_share_mean"] for r in runs]),
        "trainer_idle_share": spread([r["trainer_idle_share_mean"] for r in runs]),
        "staleness_local": staleness_summary(merge_counts(r["staleness_local"]["counts"] for r in runs)),
        "staleness_external": staleness_summary(merge_counts(r["staleness_external"]["counts"] for r in runs)),
        "wire_bytes": spread([r["wire_bytes"] for r in runs]),
        "wire_bytes_per_s": spread([r["wire_bytes_per_s"] for r in runs]),
        "per_node": per_node_over_seeds(runs),
        "runs": {str(r["seed"]): r for r in runs},
    }


def ratios_at_targets(runs: list[dict], seeds: list[int], targets: Iterable[float]) -> dict[str, dict]:
    """time_to_target_ratio (scheduler / fixed, seed by seed, as in summarise) at each target:
    {f"{target:.4f}": {"mean", "half_range", "by_seed", "upper_bound", "scheduler_s", "fixed_s"}}.
    An early target is decided by one slow node's first minute; later ones need real learning,
    so the sweep shows whether a ratio at one target holds at the next."""
    out = {}
    for target in targets:
        swarm_s = {(r["arm"], r["seed"]): (swarm_time_to_target([time_to_target(n["curve"], target) for n in r["nodes"]]),
                                           r.get("budget_s"))
                   for r in runs}
        per_seed = list(seed_ratios(swarm_s, seeds).values())
        ratio = mean_ratio(per_seed)
        out[f"{target:.4f}"] = {**ratio, "scheduler_s": [p["scheduler_s"] for p in per_seed],
                                "fixed_s": [p["fixed_s"] for p in per_seed]}
    return out


def goals(ratio: dict, share: dict) -> dict:
    """The issue's goals: time_to_target_ratio <= RATIO_GOAL (an upper bound that meets it meets
    it) and the scheduler arm's slowest/fastest trained share >= SHARE_GOAL (mean over seeds)."""
    r, s = ratio.get("mean"), share.get("mean")
    return {
        "time_to_target_ratio": {"goal": f"<= {RATIO_GOAL}", "value": r, "upper_bound": ratio.get("upper_bound", False),
                                 "met": r is not None and r <= RATIO_GOAL},
        "slow_fast_trained_share": {"goal": f">= {SHARE_GOAL}", "value": s, "met": s is not None and s >= SHARE_GOAL},
    }


def summarise(runs: list[dict], *, arms: list[str], seeds: list[int], target: float | None = None,
              target_gain: float = 0.05, settings: dict | None = None, command: str = "") -> dict:
    """Every run -> the results document. The target is `target`, else default_target(runs,
    target_gain); the ratio compares the "scheduler" arm with the "fixed" arm seed by seed."""
    given = target is not None
    start = default_target(runs, 0.0)  # the mean initial accuracy
    if not given:
        target = None if start is None else round(start + target_gain, 4)  # default_target(runs, target_gain)
    by_arm = {arm: [run_summary(r, target) for s in seeds for r in runs if r["arm"] == arm and r["seed"] == s]
              for arm in arms}
    summaries = {arm: arm_summary(rs) for arm, rs in by_arm.items() if rs}
    per_seed = seed_ratios({(r["arm"], r["seed"]): (r["swarm_time_to_target_s"], r["budget_s"])
                            for rs in by_arm.values() for r in rs}, seeds)
    ratio = mean_ratio(list(per_seed.values()))
    share = (summaries.get("scheduler") or {}).get("slow_fast_share_ratio") or {}
    return {
        "command": command,
        "seeds": seeds,
        "arms": list(summaries),
        "target": target,
        "target_definition": ("absolute held-out mean accuracy (--target)" if given
                              else f"mean initial held-out accuracy over every node of every run + {target_gain}"),
        "time_to_target_definition": (f"a node: the first evaluation time (s since the run's clock started) at which "
                                      f"the mean of its last {WINDOW} evaluations >= target; the swarm: the max over "
                                      "its nodes (never, if any node never)"),
        "time_to_target_ratio": ratio["mean"],
        "time_to_target_ratio_half_range": ratio["half_range"],
        "time_to_target_ratio_by_seed": per_seed,
        "time_to_target_ratio_is_upper_bound": ratio["upper_bound"],
        "time_to_target_ratio_note": ("a fixed run that never reached the target counts as its budget (a lower "
                                      "bound), which makes that seed's ratio, and the mean, an upper bound"),
        "time_to_target_ratio_at_targets": ratios_at_targets(
            runs, seeds, sorted({round(target, 4), *(round(start + g, 4) for g in SWEEP_GAINS)}) if start is not None else []),
        "time_to_target_ratio_at_targets_definition": (f"the same ratio at the mean initial accuracy + each of "
                                                       f"{list(SWEEP_GAINS)} (and at the target)"),
        "share_trained_definition": ("node k: sum over other nodes j of external_trained_by_sender_j[peer_id_k] / "
                                     "groups_generated_k; slow/fast: mean share of the nodes at the largest slowdown "
                                     "/ mean share of those at the smallest"),
        "slow_fast_share_ratio": {arm: a["slow_fast_share_ratio"] for arm, a in summaries.items()},
        "wire_bytes_definition": "sum over nodes of rollouts.bytes_fetched in a run",
        "goals": goals(ratio, share),
        "settings": settings or {},
        "results": summaries,
    }
