#!/usr/bin/env python3
"""How fast a training node's SQLite stores grow: real daemons, real rollout sharing.

Starts --nodes real `swarmnode run` processes (configs/local-train.yaml: the bundled tiny policy,
one core each; with 2 or more nodes they share rollouts, so rollouts.sqlite fills) with retention
on and a short storage.maintenance_interval_s, then follows node0 for --seconds from its first
training step. Growth is measured on the live size each retention pass leaves (file after its
WAL checkpoint and incremental vacuum), which excludes the WAL's saw-tooth:

    bytes per hour = least-squares slope of bytes_after over the passes' times x 3600
    rows per second = (rows at the end - rows at the start) / seconds between the two counts

    .venv/bin/python scripts/bench/storage_growth.py                   # 2 nodes, 120 s
    .venv/bin/python scripts/bench/storage_growth.py --nodes 1 --seconds 300 --json
"""
from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from swarmnode.config import bundled_config_path, load_config
from swarmnode.home import read_runtime
from swarmnode.node.local_swarm import LocalSwarm
from swarmnode.status.client import NoDaemon, fetch

TABLES = {"rollouts": ("received_groups", "rejections"), "metrics": ("metrics",)}
MIB = 2**20


def count_rows(home: Path) -> dict[str, int]:
    """Rows per table, read-only (the daemon keeps writing; WAL readers do not block it)."""
    counts = {}
    for store, tables in TABLES.items():
        with sqlite3.connect(f"file:{home / f'{store}.sqlite'}?mode=ro", uri=True) as conn:
            for table in tables:
                counts[table] = conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
        conn.close()
    return counts


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope dy/dx of (x, y) points; 0 with fewer than two."""
    if len(points) < 2:
        return 0.0
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    var = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / var if var else 0.0


def wait_for_training(url: str) -> None:
    while (fetch(url, timeout=2.0)["training"].get("steps") or 0) < 1:
        time.sleep(0.5)


def sample(url: str, seconds: float, interval: float) -> list[dict[str, Any]]:
    """Status documents of one node every `interval` for `seconds`."""
    start, samples = time.monotonic(), []
    while time.monotonic() - start < seconds:
        samples.append(fetch(url, timeout=2.0))
        time.sleep(interval)
    return samples


def passes(samples: list[dict[str, Any]]) -> dict[float, dict[str, Any]]:
    """Distinct retention passes seen in the samples, by their time."""
    return {m["at"]: m for s in samples if (m := s["storage"]["last_maintenance"])}


def measure(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    config = bundled_config_path("local-train.yaml")
    cfg = load_config(config, environ={})

    def node_env(index: int) -> dict[str, str]:
        return {"SWARMNODE__TRAINING__DATA_SEED": str(cfg.training.data_seed + 1000 * index),
                "SWARMNODE__STORAGE__MAINTENANCE_INTERVAL_S": str(args.maintenance_interval)}

    with LocalSwarm(root, args.nodes, config, node_env=node_env) as swarm:
        swarm.start(on_progress=lambda m: print(m, file=sys.stderr))
        node = swarm.nodes[0]
        url = read_runtime(node.home)["status_url"]
        wait_for_training(url)  # from the first step on: model loading writes nothing
        rows_before, t0 = count_rows(node.home.root), time.monotonic()
        samples = sample(url, args.seconds, args.sample_interval)
        rows_after, t1 = count_rows(node.home.root), time.monotonic()
    runs = sorted(passes(samples).items())
    growth = {store: slope([(at, m[store]["bytes_after"]) for at, m in runs]) * 3600 for store in TABLES}
    last = samples[-1]
    return {
        "nodes": args.nodes, "seconds": round(t1 - t0, 1), "maintenance_passes": len(runs),
        "policy_version": last["training"]["policy_version"],
        "steps_per_s": round((last["training"]["steps"] - samples[0]["training"]["steps"]) / (t1 - t0), 2),
        "rollouts_bytes": last["storage"]["rollouts_bytes"], "metrics_bytes": last["storage"]["metrics_bytes"],
        "rollouts_bytes_per_hour": round(growth["rollouts"]), "metrics_bytes_per_hour": round(growth["metrics"]),
        "rows_per_s": {t: round((rows_after[t] - rows_before[t]) / (t1 - t0), 2) for t in rows_after},
        "maintenance_s_max": max((m["seconds"] for _, m in runs), default=None),
        "bounds": {"rollouts_max_bytes": cfg.storage.rollouts_max_bytes, "metrics_max_bytes": cfg.storage.metrics_max_bytes,
                   "rollouts_max_age_s": cfg.storage.rollouts_max_age_s,
                   "metrics_full_resolution_s": cfg.storage.metrics_full_resolution_s},
    }


def summary(r: dict[str, Any]) -> str:
    def hours_to(bound: int, per_hour: float) -> str:
        return f"after {bound / per_hour:.0f} h" if per_hour > 0 else "never"

    b = r["bounds"]
    return (f"storage growth (node0 of {r['nodes']} sharing local-train.yaml nodes, {r['seconds']:.0f} s, "
            f"{r['steps_per_s']:.1f} steps/s): rollouts.sqlite {r['rollouts_bytes_per_hour'] / MIB:.1f} MiB/h "
            f"({r['rows_per_s']['received_groups']:.1f} received groups/s), reaching its "
            f"{b['rollouts_max_bytes'] / MIB:.0f} MiB bound {hours_to(b['rollouts_max_bytes'], r['rollouts_bytes_per_hour'])}; "
            f"metrics.sqlite {r['metrics_bytes_per_hour'] / MIB:.1f} MiB/h ({r['rows_per_s']['metrics']:.1f} rows/s), "
            f"reaching its {b['metrics_max_bytes'] / MIB:.0f} MiB bound {hours_to(b['metrics_max_bytes'], r['metrics_bytes_per_hour'])} "
            f"(downsampled after {b['metrics_full_resolution_s'] / 3600:.0f} h)")


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=2, help="nodes in the local swarm (1: no rollouts received)")
    p.add_argument("--seconds", type=float, default=120.0, help="how long node0 is followed after its first step")
    p.add_argument("--maintenance-interval", type=float, default=10.0, help="storage.maintenance_interval_s")
    p.add_argument("--sample-interval", type=float, default=2.0, help="seconds between status reads")
    p.add_argument("--root", type=Path, default=None, help="folder for homes and logs (default: a temporary one)")
    p.add_argument("--json", action="store_true", help="also print the figures as one JSON object")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="storage-growth-") as tmp:
        try:
            result = measure(args, (args.root or Path(tmp)).resolve())
        except NoDaemon as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
    for store in ("rollouts", "metrics"):
        print(f"{store}.sqlite: {result[f'{store}_bytes'] / MIB:.2f} MiB now, "
              f"{result[f'{store}_bytes_per_hour'] / MIB:.2f} MiB/h; rows/s: "
              + ", ".join(f"{t} {result['rows_per_s'][t]}" for t in TABLES[store]))
    print(f"{result['maintenance_passes']} retention passes, the longest {result['maintenance_s_max']} s; "
          f"policy version {result['policy_version']} after {result['seconds']:.0f} s")
    print(summary(result))
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
