#!/usr/bin/env python3
"""A public swarm in an emulated internet: joins, sharing per path, a partition, churn.

In network namespaces (swarmnode/testing/internet; needs root): a `swarmnode bootstrap` node
"boot" on a public address, the initial peer of all (bob joins it by /dns4 name); four training
`swarmnode run` daemons (configs/local-train.yaml, listening on every interface): pub1 and pub2
on public addresses, alice and bob each in a home behind a masquerading router with a 20 Mbit/s
link. A probe in each namespace reads the node's status twice a second. Phases:

1. join and steady sharing (--steady-s): join times, groups per minute and batch latency per
   path (public<->public, public<->NAT, NAT<->NAT through the relay), the bootstrap node's RSS
   and CPU as the relay of both homes;
2. partition: alice's home is cut off for --cut-s, then healed: seconds until both sides
   exchange again;
3. churn (--churn-s): bob and pub2 SIGKILLed and restarted at random, the bootstrap node (initial
   peer and relay) killed and restarted once; the survivors' (alice, pub1) longest gap between
   training steps, and whether each restarted node resumed and exchanged again.

    sudo .venv/bin/python scripts/experiments/internet.py            # ~9 minutes
    sudo .venv/bin/python scripts/experiments/internet.py --steady-s 60 --cut-s 30 --churn-s 90

Prints a table and writes docs/results/internet.json.
"""
from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import yaml
from rich.console import Console
from rich.table import Table

from swarmnode.testing.internet import Internet, InternetNode, why_unavailable
from swarmnode.testing.internet.measure import (
    first_exchange_after,
    groups_per_minute,
    join_times,
    longest_step_gap,
    percentile,
)

ROOT = Path(__file__).resolve().parents[2]
PORT = 31337
PUBLIC, HOMES = ("pub1", "pub2"), ("alice", "bob")
TRAINERS = PUBLIC + HOMES
SURVIVORS = ("alice", "pub1")
console = Console()


def read_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    for raw in path.read_text().splitlines():
        try:
            out.append(json.loads(raw))
        except json.JSONDecodeError:
            pass  # a line being written
    return out


def path_class(a: str, b: str) -> str:
    kinds = sorted("public" if n in PUBLIC else "NAT" for n in (a, b))
    return {("public", "public"): "public<->public", ("NAT", "public"): "public<->NAT",
            ("NAT", "NAT"): "NAT<->NAT (relayed)"}[tuple(kinds)]


def rss_and_cpu(pid: int) -> tuple[float, float]:
    """RSS (MiB) and CPU seconds of a daemon and its children (p2pd)."""
    proc = psutil.Process(pid)
    procs = [proc, *proc.children(recursive=True)]
    rss = sum(p.memory_info().rss for p in procs) / 2**20
    cpu = sum(sum(p.cpu_times()[:2]) for p in procs)
    return rss, cpu


class Run:
    def __init__(self, workdir: Path, config: Path, boot_config: Path):
        self.net = Internet()
        self.hosts = {name: self.net.add_public_host(name) for name in ("boot", "pub1", "pub2")}
        for name in HOMES:
            self.hosts[name] = self.net.add_home(name, uplink_mbit=20).hosts[0]
        self.nodes: dict[str, InternetNode] = {}
        self.started: dict[str, float] = {}
        self.probes: dict[str, Path] = {}
        self.workdir, self.config, self.boot_config = workdir, config, boot_config
        self.ids: dict[str, str] = {}

    def start(self, name: str, initial: list[str]) -> None:
        args = sum((["--initial-peer", m] for m in initial), [])
        if name == "boot":
            node = self.nodes.get(name) or InternetNode(self.net, self.hosts[name], self.workdir / name, self.boot_config,
                                                        args=["--port", str(PORT)], command="bootstrap")
        else:
            node = self.nodes.get(name) or InternetNode(self.net, self.hosts[name], self.workdir / name, self.config,
                                                        args=args)
        self.nodes[name] = node
        node.start()
        self.started.setdefault(name, time.time())
        if name not in self.probes:
            self.probes[name] = node.start_probe()

    def lines(self, name: str) -> list[dict[str, Any]]:
        return read_lines(self.probes[name])


def phase_join(run: Run, steady_s: float) -> dict[str, Any]:
    boot = run.hosts["boot"]
    run.start("boot", [])
    run.ids["boot"] = run.nodes["boot"].wait_ready()["peer_id"]
    by_ip = f"/ip4/{boot.address}/tcp/{PORT}/p2p/{run.ids['boot']}"
    by_name = f"/dns4/{boot.dns_name}/tcp/{PORT}/p2p/{run.ids['boot']}"
    for name in TRAINERS:
        run.start(name, [by_name if name == "bob" else by_ip])
    for name in TRAINERS:
        run.ids[name] = run.nodes[name].wait_ready()["peer_id"]
    console.print("bootstrap node and 4 training nodes up; sharing for", steady_s, "s")
    time.sleep(min(60.0, steady_s / 2))  # reachability checks, relays, the first fetches
    pid = run.nodes["boot"].process.pid
    _, cpu0 = rss_and_cpu(pid)
    start = time.time()
    rss_samples = []
    while time.time() - start < steady_s:
        time.sleep(5)
        rss_samples.append(rss_and_cpu(pid)[0])
    end = time.time()
    _, cpu1 = rss_and_cpu(pid)
    pairs = []
    for a in TRAINERS:
        lines = run.lines(a)
        last = next((x for x in reversed(lines) if x.get("up")), {})
        for b in TRAINERS:
            if a == b:
                continue
            latency = (last.get("latency") or {}).get(run.ids[b]) or [None, None]
            pairs.append({"receiver": a, "sender": b, "path": path_class(a, b),
                          "groups_per_min": round(groups_per_minute(lines, run.ids[b], start, end), 1),
                          "latency_p50_s": latency[0], "latency_p99_s": latency[1]})
    joins = {name: join_times(run.lines(name), run.started[name]) for name in TRAINERS}
    forwarded = {}  # what each public node relayed (the homes' second relay is a training node)
    for name in ("boot", *PUBLIC):
        counters = (((run.nodes[name].status() or {}).get("network") or {}).get("counters") or {})
        forwarded[name] = {"forwarded": counters.get("forwarded", 0),
                           "forwarded_mib": round(counters.get("forwarded_bytes", 0) / 2**20, 1)}
    network = (run.nodes["boot"].status() or {}).get("network") or {}
    relay = {"node": "bootstrap", "rss_mib_max": round(max(rss_samples), 1),
             "cpu_share": round((cpu1 - cpu0) / (end - start), 3), "nodes_relayed": len(network.get("relayed_for") or []),
             "forwarded": (network.get("counters") or {}).get("forwarded"),
             "forwarded_mib": round(((network.get("counters") or {}).get("forwarded_bytes") or 0) / 2**20, 1)}
    return {"pairs": pairs, "joins": joins, "relay": relay, "forwarded_by": forwarded, "window_s": round(end - start, 1)}


def phase_partition(run: Run, cut_s: float) -> dict[str, Any]:
    home = run.hosts["alice"].home
    console.print(f"cutting alice's home off for {cut_s:.0f} s")
    run.net.cut(home)
    time.sleep(cut_s)
    run.net.heal(home)
    healed = time.time()
    deadline = healed + 120
    back_in = back_out = None
    while time.time() < deadline and (back_in is None or back_out is None):
        time.sleep(2)
        alice = run.lines("alice")
        ins = [first_exchange_after(alice, run.ids[p], healed) for p in TRAINERS if p != "alice"]
        outs = [first_exchange_after(run.lines(p), run.ids["alice"], healed) for p in TRAINERS if p != "alice"]
        back_in = min((t for t in ins if t), default=None)
        back_out = min((t for t in outs if t), default=None)
    both = None if back_in is None or back_out is None else round(max(back_in, back_out) - healed, 1)
    return {"cut_s": cut_s, "exchange_again_s": both,
            "alice_receives_again_s": None if back_in is None else round(back_in - healed, 1),
            "others_receive_again_s": None if back_out is None else round(back_out - healed, 1)}


def wait_for_policy_version(node: InternetNode, timeout_s: float = 60.0) -> int | None:
    """The policy version a restarted node trains from, once its trainer reports one."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        version = ((node.status() or {}).get("training") or {}).get("policy_version")
        if version is not None:
            return version
        time.sleep(1)
    return None


def phase_churn(run: Run, churn_s: float, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    start = time.time()
    events, restarted = [], []
    bootstrap_done = False
    while time.time() - start < churn_s:
        time.sleep(rng.uniform(15, 30))
        victim = "boot" if not bootstrap_done and time.time() - start > churn_s / 2 else rng.choice(["bob", "pub2"])
        bootstrap_done = bootstrap_done or victim == "boot"
        before = (run.nodes[victim].status() or {}).get("training", {}).get("policy_version")
        run.nodes[victim].kill()
        killed = time.time()
        time.sleep(rng.uniform(3, 10))
        run.nodes[victim].start()
        run.nodes[victim].wait_ready()
        after = wait_for_policy_version(run.nodes[victim]) if victim != "boot" else None
        events.append({"node": victim, "killed_at_s": round(killed - start, 1), "policy_version_before": before,
                       "policy_version_after_restart": after})
        restarted.append((victim, killed))
        console.print(f"  churn: {victim} killed at {killed - start:.0f} s, restarted (policy v{before} -> v{after})")
    time.sleep(30)
    end = time.time()
    rejoined = {}
    for victim, killed in restarted:
        if victim == "boot":  # the relay: both homes exchange with each other again through it
            times = [first_exchange_after(run.lines("alice"), run.ids["bob"], killed)]
        else:
            times = [first_exchange_after(run.lines(victim), run.ids[p], killed) for p in TRAINERS if p != victim]
        rejoined[f"{victim}@{killed - start:.0f}s"] = min((t - killed for t in times if t), default=None)
    return {"churn_s": churn_s, "events": events,
            "survivor_longest_step_gap_s": {name: round(longest_step_gap(run.lines(name), start, end), 1)
                                            for name in SURVIVORS},
            "restarted_exchange_again_s": {k: None if v is None else round(v, 1) for k, v in rejoined.items()}}


def summarize(join: dict[str, Any]) -> dict[str, Any]:
    by_path: dict[str, dict[str, Any]] = {}
    for pair in join["pairs"]:
        entry = by_path.setdefault(pair["path"], {"groups_per_min": [], "p50": [], "p99": [], "pairs": 0})
        entry["pairs"] += 1
        entry["groups_per_min"].append(pair["groups_per_min"])
        if pair["latency_p50_s"] is not None:
            entry["p50"].append(pair["latency_p50_s"])
            entry["p99"].append(pair["latency_p99_s"])
    return {path: {"pairs": e["pairs"], "groups_per_min_mean": round(sum(e["groups_per_min"]) / len(e["groups_per_min"]), 1),
                   "groups_per_min_min": min(e["groups_per_min"]),
                   "latency_p50_s": percentile(e["p50"], 0.5), "latency_p99_s": max(e["p99"], default=None)}
            for path, e in by_path.items()}


def print_table(result: dict[str, Any]) -> None:
    table = Table(title="emulated internet: sharing per path", width=80)
    for col in ("path", "pairs", "groups/min mean", "min", "p50 s", "p99 s"):
        table.add_column(col, justify="right" if col != "path" else "left")
    for path, e in result["paths"].items():
        table.add_row(path, str(e["pairs"]), f"{e['groups_per_min_mean']:.0f}", f"{e['groups_per_min_min']:.0f}",
                      f"{e['latency_p50_s'] or 0:.2f}", f"{e['latency_p99_s'] or 0:.2f}")
    console.print(table)
    for name, j in result["join"]["joins"].items():
        console.print(f"join {name}: first peer {j['to_first_peer_s']:.1f} s, first group {j['to_first_group_s']:.1f} s")
    console.print(f"relay (bootstrap node): RSS {result['join']['relay']['rss_mib_max']} MiB, CPU "
                  f"{result['join']['relay']['cpu_share']:.2f} cores, relaying for {result['join']['relay']['nodes_relayed']}")
    console.print(f"partition: exchange again {result['partition']['exchange_again_s']} s after the heal")
    console.print(f"churn: survivor's longest step gap {result['churn']['survivor_longest_step_gap_s']} s; "
                  f"restarted nodes exchange again after {result['churn']['restarted_exchange_again_s']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steady-s", type=float, default=120)
    parser.add_argument("--cut-s", type=float, default=60)
    parser.add_argument("--churn-s", type=float, default=180)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/swarmnode-internet"))
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "internet.json")
    args = parser.parse_args()
    reason = why_unavailable()
    if reason:
        console.print(f"cannot run: {reason}")
        return 2
    shutil.rmtree(args.workdir, ignore_errors=True)
    args.workdir.mkdir(parents=True)
    config = yaml.safe_load((ROOT / "configs" / "local-train.yaml").read_text())
    config["network"]["host_maddrs"] = [f"/ip4/0.0.0.0/tcp/{PORT}"]
    config_path = args.workdir / "internet.yaml"
    config_path.write_text(yaml.safe_dump(config))
    boot = yaml.safe_load((ROOT / "configs" / "bootstrap.yaml").read_text())
    boot["swarm"], boot["records"] = config["swarm"], config["records"]  # the swarm's name and windows
    boot["network"]["host_maddrs"] = [f"/ip4/0.0.0.0/tcp/{PORT}"]
    boot_path = args.workdir / "bootstrap.yaml"
    boot_path.write_text(yaml.safe_dump(boot))
    run = Run(args.workdir, config_path, boot_path)
    try:
        join = phase_join(run, args.steady_s)
        partition = phase_partition(run, args.cut_s)
        churn = phase_churn(run, args.churn_s, args.seed)
    finally:
        for node in run.nodes.values():
            node.stop()
        run.net.close()
    result = {"command": " ".join(sys.argv),
              "config": "configs/local-train.yaml and configs/bootstrap.yaml, port 31337, homes 20 Mbit/s",
              "paths": summarize(join), "join": join, "partition": partition, "churn": churn}
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print_table(result)
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
