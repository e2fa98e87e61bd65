#!/usr/bin/env python3
"""Hostile-peer harness: every attack class in turn against a node of a 2-node honest swarm.

Two real `swarmnode run` daemons on 127.0.0.1 train the bundled policy and share rollouts (SAPO
4/4, small per-peer bounds: swarmnode/testing/hostile/victim.py). For each attack a hostile peer process
(`python -m swarmnode.testing.hostile.peer`: real identities, real p2pd, the real protocol) joins through
node0, the victim, and runs that one attack; the harness samples node0's status twice a second
and reports, per attack: messages the hostile peer sent, node crashes (goal 0), the rejections
node0 counted during it (by reason), node0's RSS (daemon + p2pd) before and after, and honest
throughput before and during it (groups accepted from node1 per second, node0's training steps
per second). A crashed or failed node0 is counted and restarted.

    .venv/bin/python scripts/experiments/hostile_harness.py                       # all attacks, ~6 minutes
    .venv/bin/python scripts/experiments/hostile_harness.py --attacks replay,garbage --seconds 6
    .venv/bin/python scripts/experiments/hostile_harness.py --reward-curve --steps 600 --seeds 0 1   # ~7 minutes

--reward-curve trains the honest swarm for --steps steps, clean and again under a mixed attack
(swarmnode/testing/hostile/attacks.py MIXED, repeated until training ends), for each seed, and compares the
honest nodes' own reward (metrics.sqlite 'local_reward_mean' per step): mean and spread of both,
and a PNG of the curves.

Writes docs/results/hostile.json (and hostile_reward.json / .png).
"""
from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from rich import box
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from swarmnode.node.local_swarm import LocalSwarm
from swarmnode.testing.hostile.attacks import ALL, EXPECTED, MIXED, expand
from swarmnode.testing.hostile.victim import (
    Monitor,
    counter_delta,
    hostile_command,
    rates,
    read_result,
    sample,
    start_hostile,
    status,
    write_honest_config,
)

ROOT = Path(__file__).resolve().parents[2]

# `stall` (fetch answers that never come) before the floods: the identity flood's values live on
# for 100 s and would muddle the next attack's throughput.
DEFAULT_ATTACKS = tuple(a for a in ALL if a != "identity_flood") + ("stall", "identity_flood")
SHORT = {"out_of_range": "range", "implausible_logprobs": "implaus", "from_future": "future", "sender_mismatch": "sender",
         "key_binding": "binding", "invalid_field": "invalid", "unsupported_version": "version", "bad_signature": "sig",
         "dht_expiration": "dht_exp", "prompt_mismatch": "prompt", "model_mismatch": "model", "rate_limited": "rate",
         "unknown_task": "task", "wrong_kind": "kind", "subkey_mismatch": "subkey", "unknown_key": "key",
         "incompatible_version": "incompat"}


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--attacks", default=",".join(DEFAULT_ATTACKS), help="comma-separated attacks (default: all + stall)")
    p.add_argument("--seconds", type=float, default=8.0, help="most time one attack takes (floods take all of it)")
    p.add_argument("--baseline-s", type=float, default=8.0, help="honest throughput is measured this long before each attack")
    p.add_argument("--settle-s", type=float, default=3.0, help="wait this long after an attack before reading counts and RSS")
    p.add_argument("--identities", type=int, default=20_000, help="identity_flood: fresh identities")
    p.add_argument("--root", type=Path, default=ROOT / "runs" / "hostile")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "results")
    p.add_argument("--reward-curve", action="store_true", help="clean vs attacked reward curves instead of the table")
    p.add_argument("--steps", type=int, default=600, help="--reward-curve: training steps per run")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1], help="--reward-curve: data seeds")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                   help="override the honest nodes' config (YAML value), e.g. --set training.local_rollouts=16")
    return p.parse_args(argv)


def node_env(seed: int = 0, max_steps: int | None = None):
    def env(index: int) -> dict[str, str]:
        out = {"SWARMNODE__TRAINING__DATA_SEED": str(1000 + 100_000 * seed + 1000 * index)}
        if max_steps is not None:
            out["SWARMNODE__TRAINING__MAX_STEPS"] = str(max_steps)
        return out

    return env


def parse_overrides(items: list[str]) -> dict[str, dict[str, Any]]:
    """["training.lr=3e-4", ...] -> {"training": {"lr": 0.0003}}; a malformed item is one line of error."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        section, dot, field = key.partition(".")
        if not (sep and dot and section and field):
            raise SystemExit(f"--set {item!r}: expected SECTION.FIELD=VALUE, e.g. training.lr=0.0003")
        out.setdefault(section, {})[field] = yaml.safe_load(value)
    return out


def start_swarm(root: Path, console: Console, seed: int = 0, max_steps: int | None = None,
                overrides: dict[str, dict[str, Any]] | None = None) -> tuple[LocalSwarm, str, str]:
    """A started 2-node honest swarm; returns it, node1's peer id and node0's multiaddr."""
    root.mkdir(parents=True, exist_ok=True)
    config = write_honest_config(root / "honest.yaml", overrides)
    swarm = LocalSwarm(root / "swarm", 2, config, node_env=node_env(seed, max_steps))
    swarm.start(on_progress=lambda msg: console.print(f"[dim]  {msg}[/dim]"))
    victim, honest = swarm.nodes
    honest_id = status(honest.home)["peer_id"]
    maddr = status(victim.home)["multiaddrs"][0]
    return swarm, honest_id, maddr


def wait_sharing(swarm: LocalSwarm, honest_id: str, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = sample(swarm.nodes[0].home, honest_id)
        if s.steps > 0 and (s.honest_stored or 0) > 0:
            return
        time.sleep(1.0)
    raise SystemExit("node0 did not start training on node1's groups; see the logs under the run root")


# -- the table -----------------------------------------------------------------------------------


def fmt(value: Any, spec: str = ".0f") -> str:
    return "-" if value is None else format(value, spec)


# status["limits"] counters (the others there are gauges: peers, tracked_senders)
LIMIT_COUNTERS = {"serve_refused": "refused", "accept_deferred": "deferred", "values_over_key_cap": "over_cap",
                  "senders_evicted": "evicted", "peers_evicted": "p_evicted", "rejection_senders_evicted": "r_evicted"}


def reasons_text(delta: dict[str, int], expected: tuple[str, ...], limits: dict[str, int],
                 honest: dict[str, int]) -> Text:
    """Rejections by reason (expected ones green; those counted against the honest node1 red,
    marked "node1"), then the limits that turned things away (dim)."""
    lines = [(f"{SHORT.get(reason, reason)} {n}", "green" if reason in expected else "")
             for reason, n in sorted(delta.items(), key=lambda kv: -kv[1])]
    lines += [(f"node1: {SHORT.get(reason, reason)} {n}", "red") for reason, n in sorted(honest.items())]
    lines += [(f"{LIMIT_COUNTERS[k]} {n}", "dim") for k, n in sorted(limits.items(), key=lambda kv: -kv[1])
              if k in LIMIT_COUNTERS]
    text = Text()
    for i, (line, style) in enumerate(lines):
        text.append(("\n" if i else "") + line, style=style)
    return text if lines else Text("none", style="dim")


def render(rows: list[dict[str, Any]], current: str | None = None) -> Group:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1), collapse_padding=True, title="hostile peer vs node0",
                  title_justify="left", caption="RSS: daemon+p2pd MiB; honest: groups/s from node1; steps/s of node0",
                  caption_justify="left")
    table.add_column("attack", no_wrap=True)
    table.add_column("sent", justify="right")
    table.add_column("crash", justify="right")
    table.add_column("rejections", no_wrap=True)
    table.add_column("RSS", justify="right", no_wrap=True)
    table.add_column("honest", justify="right", no_wrap=True)
    table.add_column("steps/s", justify="right", no_wrap=True)
    for r in rows:
        crash = Text(str(r["crashes"]), style="red bold" if r["crashes"] else "green")
        table.add_row(
            r["attack"], fmt(r["messages_sent"], "d"), crash,
            reasons_text(r["rejections"], EXPECTED.get(r["attack"], EXPECTED["stall"]).reasons, r.get("limits_delta") or {},
                         r.get("rejections_of_honest") or {}),
            f"{fmt(r['rss_mib_before'])}>{fmt(r['rss_mib_after'])}",
            f"{fmt(r['honest_groups_per_s_before'], '.1f')}>{fmt(r['honest_groups_per_s_during'], '.1f')}",
            f"{fmt(r['steps_per_s_before'], '.1f')}>{fmt(r['steps_per_s_during'], '.1f')}",
        )
    parts: list[Any] = [table]
    if current:
        parts.append(Text(current, style="yellow"))
    return Group(*parts)


def run_attack(name: str, args: argparse.Namespace, swarm: LocalSwarm, honest_id: str, maddr: str,
               monitor: Monitor, live: Live, rows: list[dict[str, Any]]) -> tuple[dict[str, Any], str]:
    victim = swarm.nodes[0]
    root = args.root / "attacks"
    root.mkdir(parents=True, exist_ok=True)
    live.update(render(rows, f"{name}: measuring honest throughput for {args.baseline_s:g}s"))
    t0 = time.time()
    time.sleep(args.baseline_s)
    before = monitor.between(t0, time.time())
    base = rates(before)
    rss_before = statistics.mean([s.rss_mib for s in before if s.rss_mib is not None] or [0.0]) or None
    rejected_before = before[-1].rejected if before else {}
    limits_before = before[-1].limits if before else {}
    honest_before = (before[-1].rejected_by_sender.get(honest_id) or {}) if before else {}

    out = root / f"{name}.json"
    command = hostile_command(maddr, name, out, seconds=args.seconds, identities=args.identities,
                              extra=["--identity-seconds", str(max(60.0, args.seconds))])
    proc = start_hostile(command, root / f"{name}.log")
    crashes, failure = 0, None
    while proc.poll() is None:
        time.sleep(0.5)
        last = monitor.samples[-1] if monitor.samples else None
        if victim.process.poll() is not None:
            crashes, failure = 1, f"exit code {victim.process.returncode}"
            proc.kill()
            break
        if last and last.phase and str(last.phase).startswith("failed"):
            crashes, failure = 1, last.phase
            proc.kill()
            break
        live.update(render(rows, f"{name}: attacking (node0 at {last.steps if last else '?'} steps, "
                                 f"{fmt(last.rss_mib if last else None)} MiB)"))
    proc.wait()
    result = read_result(out).get("attacks", {}).get(name, {})
    t_start, t_end = result.get("started_at", t0 + args.baseline_s), result.get("ended_at", time.time())
    time.sleep(args.settle_s)
    during = monitor.between(t_start, t_end)
    after_samples = monitor.between(t_end, time.time())
    after = after_samples[-1] if after_samples else (monitor.samples[-1] if monitor.samples else None)
    hit = rates(during)
    row = {
        "attack": name,
        "messages_sent": result.get("messages"),
        "crashes": crashes,
        "failure": failure,
        "rejections": counter_delta(after.rejected, rejected_before) if after and after.phase else {},
        "rejections_of_honest": counter_delta(after.rejected_by_sender.get(honest_id) or {}, honest_before)
        if after and after.phase else {},
        "expected_reasons": list(EXPECTED[name].reasons),
        "limits_delta": counter_delta({k: v for k, v in after.limits.items() if k in LIMIT_COUNTERS}, limits_before)
        if after and after.phase else {},
        "rss_mib_before": round(rss_before, 1) if rss_before else None,
        "rss_mib_after": round(after.rss_mib, 1) if after and after.rss_mib else None,
        "rss_mib_peak": round(max((s.rss_mib for s in during + after_samples if s.rss_mib), default=0.0), 1) or None,
        "honest_groups_per_s_before": base["honest_groups_per_s"],
        "honest_groups_per_s_during": hit["honest_groups_per_s"],
        "steps_per_s_before": base["steps_per_s"],
        "steps_per_s_during": hit["steps_per_s"],
        "attack_seconds": result.get("seconds"),
        "sent": result.get("sent"),
        "details": result.get("details"),
        "limits_after": after.limits if after else None,
        "hostile_peer_ids": result.get("peer_ids"),
        "hostile_exit_code": proc.returncode,
    }
    if crashes:  # bring node0 back for the next attack
        if victim.process.poll() is None:
            victim.process.terminate()
            victim.process.wait(timeout=30)
        swarm.restart(0)
        maddr = status(victim.home)["multiaddrs"][0]
        monitor.process = victim.process
        wait_sharing(swarm, honest_id)
    return row, maddr


def table_mode(args: argparse.Namespace, console: Console) -> int:
    names = expand(args.attacks)
    console.print(f"[bold]hostile harness[/bold]: {len(names)} attacks against node0 of a 2-node swarm under {args.root}")
    shutil.rmtree(args.root / "swarm-table", ignore_errors=True)  # fresh homes, as in reward_run
    swarm, honest_id, maddr = start_swarm(args.root / "swarm-table", console, overrides=parse_overrides(args.overrides))
    rows: list[dict[str, Any]] = []
    started = time.time()
    with swarm:
        console.print("[dim]  waiting for node0 to train on node1's groups[/dim]")
        wait_sharing(swarm, honest_id)
        with Monitor(swarm.nodes[0].home, honest_id, swarm.nodes[0].process, interval=0.5) as monitor, \
                Live(render(rows), console=console, refresh_per_second=2) as live:
            for name in names:
                row, maddr = run_attack(name, args, swarm, honest_id, maddr, monitor, live, rows)
                rows.append(row)
                live.update(render(rows))
            final = monitor.samples[-1] if monitor.samples else None
    summary = {
        "command": "scripts/experiments/hostile_harness.py " + " ".join(sys.argv[1:]),
        "seconds": round(time.time() - started, 1),
        "attack_seconds": args.seconds, "identities": args.identities,
        "victim_limits": {"max_peers": 64, "max_tracked_senders": 64, "max_values_per_key": 64,
                          "serve_requests_per_s": 2, "serve_burst": 4},
        "node_crashes": sum(r["crashes"] for r in rows),
        "final_limits": final.limits if final else None,
        "final_rejected": final.rejected if final else None,
        "attacks": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "hostile.json"
    path.write_text(json.dumps(summary, indent=1), encoding="utf-8")
    crashes = summary["node_crashes"]
    console.print()
    console.print(f"node crashes: [{'red' if crashes else 'green'}]{crashes}[/]; "
                  f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return 1 if crashes else 0


# -- the reward curve ----------------------------------------------------------------------------


def local_rewards(metrics_path: Path) -> list[tuple[float, float]]:
    """(time, local_reward_mean) per training step, in step order."""
    with sqlite3.connect(str(metrics_path)) as conn:
        rows = conn.execute(
            "SELECT s.value, r.time, r.value FROM metrics s JOIN metrics r ON s.version = r.version AND s.time = r.time "
            "WHERE s.name = 'step' AND r.name = 'local_reward_mean' ORDER BY s.value"
        ).fetchall()
    return [(t, reward) for _, t, reward in rows]


def reward_run(args: argparse.Namespace, console: Console, seed: int, attacked: bool) -> dict[str, Any]:
    name = f"seed{seed}-{'attacked' if attacked else 'clean'}"
    root = args.root / "reward" / name
    # Fresh homes: a home left by an earlier run would resume from its checkpoint and metrics.
    shutil.rmtree(root, ignore_errors=True)
    console.print(f"[bold]{name}[/bold]: {args.steps} steps")
    swarm, honest_id, maddr = start_swarm(root, console, seed=seed, max_steps=args.steps,
                                          overrides=parse_overrides(args.overrides))
    proc, attack_started = None, None
    started = time.time()
    with swarm:
        if attacked:
            proc = start_hostile(hostile_command(maddr, "mixed", root / "hostile.json", seconds=5.0,
                                                 total_seconds=24 * 3600.0), root / "hostile.log")
        with Live(Text(""), console=console, refresh_per_second=1) as live:
            while True:
                rows = swarm.poll()
                steps = [(r.get("training") or {}).get("steps") for r in rows]
                result = read_result(root / "hostile.json") if attacked else {}
                done_attacks = len(result.get("attacks", {}))
                live.update(Text(f"  steps {steps}  {'attacks run: ' + str(done_attacks) if attacked else 'clean'}"))
                if swarm.training_done(rows):
                    break
                time.sleep(1.0)
        console.print()
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except Exception:  # noqa: BLE001
                proc.kill()
            result = read_result(root / "hostile.json")
            attack_started = min((a["started_at"] for a in result.get("attacks", {}).values()), default=None)
    failed = [r["name"] for r in rows if "error" in r or str((r.get("training") or {}).get("phase", "")).startswith("failed")]
    curves = [local_rewards(n.home.root / "metrics.sqlite") for n in swarm.nodes]
    under_attack = None
    if attack_started is not None:
        under_attack = [round(sum(1 for t, _ in c if t >= attack_started) / max(1, len(c)), 3) for c in curves]
    return {"seed": seed, "attacked": attacked, "seconds": round(time.time() - started, 1), "failed": failed,
            "rewards": [[r for _, r in c] for c in curves], "share_of_steps_under_attack": under_attack}


def reward_mode(args: argparse.Namespace, console: Console) -> int:
    runs = [reward_run(args, console, seed, attacked) for seed in args.seeds for attacked in (False, True)]
    summary: dict[str, Any] = {"command": "scripts/experiments/hostile_harness.py " + " ".join(sys.argv[1:]), "steps": args.steps,
                               "seeds": args.seeds, "attack": list(MIXED), "runs": runs, "conditions": {}}
    for cond in ("clean", "attacked"):
        mine = [r for r in runs if r["attacked"] == (cond == "attacked")]
        means = [statistics.mean(c) for r in mine for c in r["rewards"] if c]
        curves = [c for r in mine for c in r["rewards"] if c]
        length = min((len(c) for c in curves), default=0)
        summary["conditions"][cond] = {
            "mean_local_reward": round(statistics.mean(means), 4) if means else None,
            "std_over_nodes_and_seeds": round(statistics.stdev(means), 4) if len(means) > 1 else None,
            "per_node_means": [round(m, 4) for m in means],
            "curve": [round(statistics.mean(c[i] for c in curves), 4) for i in range(length)],
        }
    clean, hit = summary["conditions"]["clean"], summary["conditions"]["attacked"]
    if clean["mean_local_reward"] is not None and hit["mean_local_reward"] is not None:
        spread = max(clean["std_over_nodes_and_seeds"] or 0.0, hit["std_over_nodes_and_seeds"] or 0.0)
        diff = hit["mean_local_reward"] - clean["mean_local_reward"]
        summary["difference"] = round(diff, 4)
        summary["within_noise"] = abs(diff) <= 2 * spread
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "hostile_reward.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    plot(summary, args.out / "hostile_reward.png")
    table = Table(box=box.SIMPLE_HEAD, title=f"own reward of the honest nodes, {args.steps} steps, seeds {args.seeds}")
    for col in ("run", "mean", "spread", "per node"):
        table.add_column(col, justify="right" if col != "run" else "left")
    for cond, c in summary["conditions"].items():
        table.add_row(cond, fmt(c["mean_local_reward"], ".4f"), fmt(c["std_over_nodes_and_seeds"], ".4f"),
                      ", ".join(f"{m:.3f}" for m in c["per_node_means"]))
    console.print(table)
    console.print(f"attacked - clean: {summary.get('difference')} (within 2 x spread: {summary.get('within_noise')}); "
                  f"share of steps under attack: {[r['share_of_steps_under_attack'] for r in runs if r['attacked']]}")
    console.print(f"wrote {args.out / 'hostile_reward.json'} and {args.out / 'hostile_reward.png'}")
    return 0


def plot(summary: dict[str, Any], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(7, 4))
    for cond, colour in (("clean", "tab:blue"), ("attacked", "tab:red")):
        for run in (r for r in summary["runs"] if r["attacked"] == (cond == "attacked")):
            for curve in run["rewards"]:
                ax.plot(_smooth(curve), color=colour, alpha=0.25, linewidth=0.8)
        c = summary["conditions"][cond]
        ax.plot(_smooth(c["curve"]), color=colour, linewidth=2,
                label=f"{cond}: mean {c['mean_local_reward']} (spread {c['std_over_nodes_and_seeds']})")
    ax.set_xlabel("training step")
    ax.set_ylabel("own-rollout reward (25-step average)")
    ax.set_title(f"honest nodes, clean vs under a mixed hostile peer, seeds {summary['seeds']}", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def _smooth(curve: list[float], window: int = 25) -> list[float]:
    return [statistics.mean(curve[max(0, i - window + 1): i + 1]) for i in range(len(curve))]


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    console = Console(width=min(Console().width, 100))
    return reward_mode(args, console) if args.reward_curve else table_mode(args, console)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
