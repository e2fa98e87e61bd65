#!/usr/bin/env python3
"""What a node's DHT traffic costs as the swarm grows: today's one-key-per-window layout against
the sharded layout of swarmnode/swarm/shards.py, simulated from N = 10 to 100,000 (issue 38).

SIMULATED, from the real shard code and a cost model of the DHT (the real daemons' costs are
measured by scale_bench.py and scale_population.py). Figures are per node per minute: bytes in and out, requests (sent + served), entries parsed, the busiest node against
the median, and by Monte Carlo the chance that a node finds its peers.

Cost model of hivemind's DHT (.venv/.../hivemind/dht/, the version this project pins):
- DHTNode.create defaults (node.py, which transports/hivemind/transport.py does not change):
  bucket_size 20, num_replicas 5, num_workers 4 (DEFAULT_NUM_WORKERS), cache_locally True,
  cache_nearest 1.
- A store (store_many) runs find_nearest_nodes with beam_size = max(bucket_size, num_replicas)
  = 20, then call_store on the num_replicas = 5 nearest. Its traversal uses call_find, and
  rpc_find (protocol.py) answers with the key's value from storage or cache, whichever expires
  later, plus bucket_size neighbours: a store downloads the dictionary from every holder visited.
- get(latest=True) (transport.py's get) sets sufficient_expiration_time = inf (node.get), so
  _SearchState never finishes early and traverse_dht visits until the beam_size nearest are
  visited: V = min(N-1, 20 + 4 x (rounds - 1)) nodes, rounds = 1 + ceil(log2(N/20) / log2(20))
  (each answer's 20 neighbours resolve ~log2(20) bits of the key; the 4 workers each spend a
  visit per round on the way). Every node visited answers with the whole dictionary: every node
  reads every hot key and caches it (cache_locally), so every node holds a copy.
- A get that stops at the first fresh answer (sufficient_expiration_time finite) ends when a
  holder answers: 4 workers x rounds visits, of which the last round's 4 (nearest the key, the
  holders) answer with the dictionary (the in-flight ones still answer: await_all_tasks=False).
- After a get, _cache_new_result stores the merged dictionary on cache_nearest = 1 nearest node.
- Bytes: a find request 200 B; an answer's 20 neighbours 20 x 60 B (DHTID + PeerID); a
  dictionary entry = the sealed value + 80 B (subkey = peer id, expiration, msgpack framing).
  Sealed values: a peer record ~1 KiB typically (body cap 8 KiB, codec.MAX_BODY_BYTES), an
  announcement ~400 B (body cap 1 KiB + ENVELOPE_OVERHEAD_BYTES 256).
- Entries parsed: every answer's dictionary is decoded entry by entry (hivemind merges them in
  _SearchState.add_candidate); the reader then checks the merged one (RecordIntake), and refuses
  an answer with more than limits.max_values_per_key (512) subkeys.

Arms (intervals from configs/default.yaml and node/daemon.py, node/gossip/announcements.py):
- today: one key per window and kind (peers, rollouts, summaries); every node stores its record
  every 5 s, its rollout and summary announcements every 2 s, and reads the current and previous
  window's key of records every 2 s and of both announcements every 1 s, with latest=True. The
  current key holds N entries, the previous one N x min(1, ttl 20 s / window 30 s).
- sharded: 2^bits shards per kind (bits = next_bits(0, N), the estimate taken as converged),
  summaries keyed by base (bases of 1% of the swarm each, bits from the base's size); a node
  stores under its own shard at each of levels_to_write, and reads one shard key per interval,
  cycling through shards_to_read(peer, window, bits) of the current window, stopping at the first
  fresh answer. A store's traversal meets the dictionary at the 5 replicas and at beam nodes that
  read the shard themselves (share = shards read / shards).

Busiest node: every key's 20 XOR-nearest nodes (among N random 64-bit ids, ids near the key in
sorted order; keys are sha256 of the real key strings) answer every get and store of that key,
over the 3 key generations a minute of 2 windows touches; path visits are spread evenly over
all nodes. Computed over all N nodes (no sampling), per-node requester cost in expectation.

Monte Carlo (the real shard_of / shards_to_read on N synthetic peer ids): a step lasts 5 s (a
short step is the hard case: fewer reads per step); a node needs J = 16 groups per step, a peer's
step batch of I = 16 groups yields ~4 usable ones (SAPO's nonzero-advantage, positive-only
selection), so it needs announcements of >= 4 distinct peers read within one step; an entry is
in the current window's key once its owner's first store of the window (phase uniform in 2 s)
has happened. Summaries: the node's base holds max(3, 1% of N) nodes; it needs >= 2 others in
the shards of one window's read set (a conservative outer step of one window). Today's layout
finds them iff the key's dictionary has at most 512 entries.

    .venv/bin/python scripts/bench/scale_sim.py
    .venv/bin/python scripts/bench/scale_sim.py --ns 10 100 1000 --trials 2000
    .venv/bin/python scripts/bench/scale_sim.py --target 8 --out /tmp/scale_sim_t8.json
"""
from __future__ import annotations

import argparse
import hashlib
import math
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml
from rich.console import Console, Group
from rich.progress import Progress
from rich.table import Table

from swarmnode.testing.experiments.figures import loglog_slope
from swarmnode.testing.experiments.local_runs import write_results
from swarmnode.swarm.shards import (
    SHARDS_READ_PER_WINDOW, TARGET_PER_SHARD, levels_to_write, next_bits, shard_of, shards_to_read)
from swarmnode.swarm.windows import (
    peer_records_key,
    peer_records_shard_key,
    rollouts_key,
    rollouts_shard_key,
    summaries_key,
    summaries_shard_key,
)

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_NS = (10, 100, 1000, 2048, 10_000, 100_000)

BUCKET_SIZE = 20  # DHTNode.create bucket_size: the beam of a traversal
NUM_REPLICAS = 5  # DHTNode.create num_replicas: nodes a store writes to
NUM_WORKERS = 4  # hivemind.dht.node.DEFAULT_NUM_WORKERS: concurrent visits of a traversal
CACHE_NEAREST = 1  # DHTNode.create cache_nearest: nodes a get copies its result to
BITS_PER_ROUND = math.log2(BUCKET_SIZE)  # an answer's 20 neighbours resolve ~4.3 bits of the key
FIND_REQUEST_BYTES = 200  # a call_find request: key ids, auth, framing
NEIGHBOUR_BYTES = 60  # one neighbour in an answer: DHTID (20 B) + PeerID (~38 B) + framing
ENTRY_OVERHEAD_BYTES = 80  # subkey (peer id ~52 chars), expiration, msgpack framing
STORE_OVERHEAD_BYTES = 200  # a call_store request around its value
RECORD_BYTES = 1024  # a sealed peer record, typically (body cap MAX_BODY_BYTES[PEER_RECORD])
ANNOUNCEMENT_BYTES = 400  # a sealed announcement: ~150 B body + the envelope (cap 1 KiB + 256)
STEP_S = 5.0  # a short training step: fewer reads per step, the hard case
USABLE_GROUPS_PER_PEER_STEP = 4  # of a peer's 16 groups a step, SAPO's selection keeps ~1/4
BASE_SHARE = 0.01  # the node's base is 1% of the swarm
MIN_BASE_NODES = 3  # ...and at least itself and 2 partners, so small swarms can pass at all


def config_intervals(path: Path = ROOT / "configs" / "default.yaml") -> dict:
    """The intervals and limits the model takes from the default config."""
    c = yaml.safe_load(path.read_text(encoding="utf-8"))
    return {
        "window_s": c["swarm"]["window_s"], "ttl_s": c["records"]["ttl_s"],
        "record_store_s": c["records"]["publish_interval_s"], "record_read_s": c["records"]["poll_interval_s"],
        "rollout_store_s": c["rollouts"]["announce_interval_s"], "rollout_read_s": c["rollouts"]["fetch_interval_s"],
        "summary_store_s": c["summaries"]["announce_interval_s"], "summary_read_s": c["summaries"]["fetch_interval_s"],
        "external_rollouts": c["training"]["external_rollouts"], "max_values_per_key": c["limits"]["max_values_per_key"],
    }


# ---- the cost model of one DHT operation --------------------------------------------------

def lookup_rounds(n: int) -> int:
    """rounds = 1 + ceil(log2(N / bucket) / log2(bucket)): visits until the key's neighbourhood."""
    return 1 + math.ceil(max(0.0, math.log2(max(n, 1) / BUCKET_SIZE)) / BITS_PER_ROUND)


def visits_latest(n: int) -> int:
    """Nodes a latest=True get (or a store's traversal) visits: min(N-1, 20 + 4 x (rounds-1))."""
    return min(n - 1, BUCKET_SIZE + NUM_WORKERS * (lookup_rounds(n) - 1))


def visits_first_fresh(n: int) -> int:
    """Nodes a get that stops at the first fresh answer visits: min(N-1, 4 x rounds)."""
    return min(n - 1, NUM_WORKERS * lookup_rounds(n))


def dictionary_bytes(entries: float, entry_bytes: int) -> float:
    return entries * (entry_bytes + ENTRY_OVERHEAD_BYTES)


@dataclass
class Cost:
    """One node's traffic: bytes out and in, requests (sent + served), entries parsed."""
    out_bytes: float = 0.0
    in_bytes: float = 0.0
    requests: float = 0.0
    entries: float = 0.0

    def plus(self, other: "Cost", times: float = 1.0) -> "Cost":
        return Cost(self.out_bytes + times * other.out_bytes, self.in_bytes + times * other.in_bytes,
                    self.requests + times * other.requests, self.entries + times * other.entries)


def get_cost(n: int, entries: float, entry_bytes: int, latest: bool) -> Cost:
    """The reader's side of one get: a find request per visit; each visit answers neighbours,
    and the holders visited (all of them for latest=True, the last round's 4 otherwise) the
    dictionary; every answer decoded, the merged one checked; its copy to cache_nearest nodes."""
    visits = visits_latest(n) if latest else visits_first_fresh(n)
    holders = visits if latest else min(visits, NUM_WORKERS)
    answer = dictionary_bytes(entries, entry_bytes)
    neighbours = min(BUCKET_SIZE, n - 1) * NEIGHBOUR_BYTES
    copies = min(CACHE_NEAREST, visits - 1) if visits > 1 else 0
    return Cost(out_bytes=visits * FIND_REQUEST_BYTES + copies * (answer + STORE_OVERHEAD_BYTES),
                in_bytes=visits * neighbours + holders * answer,
                requests=visits + copies, entries=holders * entries + entries)


def store_cost(n: int, entries: float, entry_bytes: int, holder_share: float) -> Cost:
    """The writer's side of one store: a latest-style traversal (visits_latest), whose holders
    (holder_share of the visits) answer the dictionary, then its value to the num_replicas
    nearest (itself excepted: min(5, N-1) remote stores)."""
    visits = visits_latest(n)
    replicas = min(NUM_REPLICAS, n - 1)
    holders = visits * holder_share
    return Cost(out_bytes=visits * FIND_REQUEST_BYTES + replicas * (entry_bytes + ENTRY_OVERHEAD_BYTES + STORE_OVERHEAD_BYTES),
                in_bytes=visits * min(BUCKET_SIZE, n - 1) * NEIGHBOUR_BYTES + holders * dictionary_bytes(entries, entry_bytes),
                requests=visits + replicas, entries=holders * entries)


# ---- the two layouts ------------------------------------------------------------------------

@dataclass
class KeyClass:
    """A family of keys of one kind and window generation, and how the swarm uses it."""
    kind: str
    entry_bytes: int
    entries: float  # entries in one key's dictionary
    names: list[str]  # the key strings (their sha256 places them in the DHT)
    gets_per_node: float  # gets per node per minute on this family (all its keys)
    stores_per_node: float  # stores per node per minute on this family
    latest: bool  # get(latest=True), else stop at the first fresh answer
    holder_share: float  # share of a store traversal's visits that answer with the dictionary
    readable: bool = True  # a reader takes the answer (today: refused over max_values_per_key)


def today_classes(n: int, cfg: dict, generation: int) -> list[KeyClass]:
    """Today's layout for one window: a current and a previous key per kind."""
    prev_share = min(1.0, cfg["ttl_s"] / cfg["window_s"])
    out = []
    for kind, key_of, size, store_s, read_s in (
            ("peers", peer_records_key, RECORD_BYTES, cfg["record_store_s"], cfg["record_read_s"]),
            ("rollouts", rollouts_key, ANNOUNCEMENT_BYTES, cfg["rollout_store_s"], cfg["rollout_read_s"]),
            ("summaries", summaries_key, ANNOUNCEMENT_BYTES, cfg["summary_store_s"], cfg["summary_read_s"])):
        for offset, entries, stores in ((0, n, 60 / store_s), (1, n * prev_share, 0.0)):
            out.append(KeyClass(kind, size, entries, [key_of("s", generation - offset)], 60 / read_s, stores,
                                latest=True, holder_share=1.0, readable=entries <= cfg["max_values_per_key"]))
    return out


def sharded_classes(n: int, cfg: dict, generation: int) -> list[KeyClass]:
    """The sharded layout for one window: current keys only, one shard read per interval."""
    target = cfg["target_per_shard"]
    bits = next_bits(0, n, target=target)
    levels = levels_to_write(bits, n, target=target)
    base_nodes = max(MIN_BASE_NODES, math.ceil(BASE_SHARE * n))
    bases = max(1, round(n / base_nodes))
    base_bits = next_bits(0, base_nodes, target=target)
    out = []
    for kind, size, store_s, read_s in (("peers", RECORD_BYTES, cfg["record_store_s"], cfg["record_read_s"]),
                                        ("rollouts", ANNOUNCEMENT_BYTES, cfg["rollout_store_s"], cfg["rollout_read_s"])):
        key_of = peer_records_shard_key if kind == "peers" else rollouts_shard_key
        shards = 2**bits
        share = min(1.0, NUM_REPLICAS / BUCKET_SIZE + SHARDS_READ_PER_WINDOW / shards)
        out.append(KeyClass(kind, size, n / shards, [key_of("s", generation, bits, s) for s in range(shards)],
                            60 / read_s, 60 / store_s * len(levels), latest=False, holder_share=share))
    shards = 2**base_bits
    share = min(1.0, NUM_REPLICAS / BUCKET_SIZE + SHARDS_READ_PER_WINDOW / shards)
    names = [summaries_shard_key("s", generation, f"base{b}", base_bits, s) for b in range(bases) for s in range(shards)]
    out.append(KeyClass("summaries", ANNOUNCEMENT_BYTES, base_nodes / shards, names, 60 / cfg["summary_read_s"],
                        60 / cfg["summary_store_s"] * len(levels_to_write(base_bits, base_nodes, target=target)),
                        latest=False, holder_share=share))
    return out


# ---- where the load lands -------------------------------------------------------------------

def key_id(name: str) -> int:
    """A key's place in the simulated 64-bit id space: the top 64 bits of sha256(key)."""
    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "big")


def nearest_nodes(ids: np.ndarray, keys: np.ndarray, k: int) -> np.ndarray:
    """For each key, the indices (into sorted `ids`) of its k XOR-nearest nodes, nearest first:
    all nodes when there are few, else among the 128 nearest in sorted order (an XOR subtree
    is contiguous there), wrapping around the ends."""
    n = len(ids)
    k = min(k, n)
    if n <= 128:
        candidates = np.broadcast_to(np.arange(n), (len(keys), n))
    else:
        start = np.searchsorted(ids, keys).astype(np.int64) - 64
        candidates = (start[:, None] + np.arange(128)[None, :]) % n
    distance = ids[candidates] ^ keys[:, None]
    order = np.argsort(distance, axis=1)[:, :k]
    return np.take_along_axis(candidates, order, axis=1)


@dataclass
class Served:
    """Per-node arrays of what each node serves to others in a minute."""
    out_bytes: np.ndarray
    in_bytes: np.ndarray
    requests: np.ndarray
    entries: np.ndarray

    @classmethod
    def zeros(cls, n: int) -> "Served":
        return cls(*(np.zeros(n) for _ in range(4)))

    def add(self, nodes: np.ndarray, out_b: float, in_b: float, requests: float, entries: float = 0.0) -> None:
        np.add.at(self.out_bytes, nodes, out_b)
        np.add.at(self.in_bytes, nodes, in_b)
        np.add.at(self.requests, nodes, requests)
        np.add.at(self.entries, nodes, entries)


def serve_class(c: KeyClass, n: int, ids: np.ndarray, served: Served, share_of_minute: float) -> None:
    """Add the answers one key family needs to the nodes nearest its keys (and the path visits,
    evenly) for `share_of_minute` of a minute."""
    keys = np.array([key_id(name) for name in c.names], dtype=np.uint64)
    beam = nearest_nodes(ids, keys, BUCKET_SIZE)
    gets = n * c.gets_per_node * share_of_minute / len(keys)  # per key
    stores = n * c.stores_per_node * share_of_minute / len(keys)
    answer = dictionary_bytes(c.entries, c.entry_bytes)
    neighbours = min(BUCKET_SIZE, n - 1) * NEIGHBOUR_BYTES
    beam_len = beam.shape[1]
    get_visits = visits_latest(n) if c.latest else visits_first_fresh(n)
    answering = beam_len if c.latest else min(NUM_WORKERS, beam_len)
    per_beam_node = gets * answering / beam_len  # get answers each beam node gives
    served.add(beam.ravel(), per_beam_node * (neighbours + answer), per_beam_node * FIND_REQUEST_BYTES, per_beam_node)
    store_visits = min(beam_len, visits_latest(n))
    served.add(beam.ravel(), stores * (neighbours + c.holder_share * answer), stores * FIND_REQUEST_BYTES, stores)
    replicas = beam[:, :min(NUM_REPLICAS, beam_len)].ravel()
    served.add(replicas, 0.0, stores * (c.entry_bytes + ENTRY_OVERHEAD_BYTES + STORE_OVERHEAD_BYTES), stores, stores)
    served.add(beam[:, 0], 0.0, gets * CACHE_NEAREST * (answer + STORE_OVERHEAD_BYTES), gets * CACHE_NEAREST,
               gets * CACHE_NEAREST * c.entries)
    path = len(keys) * (gets * max(0, get_visits - answering) + stores * max(0, visits_latest(n) - store_visits)) / n
    served.add(np.arange(n), path * neighbours, path * FIND_REQUEST_BYTES, path)


def own_cost(classes: list[KeyClass], n: int, share_of_minute: float) -> Cost:
    """What each node's own gets and stores cost it (the same for every node, in expectation)."""
    total = Cost()
    for c in classes:
        total = total.plus(get_cost(n, c.entries, c.entry_bytes, c.latest), c.gets_per_node * share_of_minute)
        total = total.plus(store_cost(n, c.entries, c.entry_bytes, c.holder_share), c.stores_per_node * share_of_minute)
    return total


def arm_costs(arm: str, n: int, cfg: dict, rng: np.random.Generator) -> dict:
    """One minute (two windows) of one arm: mean, median and busiest node."""
    ids = np.sort(rng.integers(0, 2**63, size=n, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, size=n, dtype=np.uint64))
    make = today_classes if arm == "today" else sharded_classes
    share = cfg["window_s"] / 60.0
    served, own = Served.zeros(n), Cost()
    for generation in (1000, 1001):
        classes = make(n, cfg, generation)
        own = own.plus(own_cost(classes, n, share))
        for c in classes:
            serve_class(c, n, ids, served, share)
    total_bytes = own.out_bytes + own.in_bytes + served.out_bytes + served.in_bytes
    median, busiest = float(np.median(total_bytes)), float(total_bytes.max())
    return {"bytes": own.out_bytes + own.in_bytes + float(total_bytes.mean() - own.out_bytes - own.in_bytes),
            "out_bytes": own.out_bytes + float(served.out_bytes.mean()), "in_bytes": own.in_bytes + float(served.in_bytes.mean()),
            "requests": own.requests + float(served.requests.mean()), "entries": own.entries + float(served.entries.mean()),
            "median_bytes": median, "busiest_bytes": busiest, "busiest_over_median": busiest / median}


# ---- does a node still find its peers? --------------------------------------------------------

def p_finds_rollouts(n: int, cfg: dict, trials: int, rng: random.Random) -> float:
    """P(announcements of >= ceil(J / usable per peer) distinct other peers within one step)."""
    need = math.ceil(cfg["external_rollouts"] / USABLE_GROUPS_PER_PEER_STEP)
    peers = [f"peer-{i}" for i in range(n)]
    bits = next_bits(0, n, target=cfg["target_per_shard"])
    members: dict[int, list[int]] = {}
    for i, peer in enumerate(peers):
        members.setdefault(shard_of(peer, bits), []).append(i)
    phase = [rng.uniform(0, cfg["rollout_store_s"]) for _ in range(n)]  # first store in a window
    reads = int(STEP_S / cfg["rollout_read_s"])
    hits = 0
    for _ in range(trials):
        me, window, start = rng.randrange(n), rng.randrange(10**6), rng.uniform(0, cfg["window_s"] - STEP_S)
        order = shards_to_read(peers[me], window, bits)
        first = rng.randrange(len(order))  # where in its cycle the step begins
        seen: set[int] = set()
        for k in range(reads):
            t = start + k * cfg["rollout_read_s"]
            seen.update(i for i in members.get(order[(first + k) % len(order)], ()) if i != me and phase[i] <= t)
        hits += len(seen) >= need
    return hits / trials


def p_finds_partners(n: int, trials: int, rng: random.Random, target: int, partners: int = 2) -> float:
    """P(>= 2 other same-base nodes in the shards of one window's read set of the base's key)."""
    base = max(MIN_BASE_NODES, math.ceil(BASE_SHARE * n))
    peers = [f"base-peer-{i}" for i in range(base)]
    bits = next_bits(0, base, target=target)
    shard = [shard_of(p, bits) for p in peers]
    hits = 0
    for _ in range(trials):
        me = rng.randrange(base)
        read = set(shards_to_read(peers[me], rng.randrange(10**6), bits))
        hits += sum(1 for i in range(base) if i != me and shard[i] in read) >= partners
    return hits / trials


def today_probabilities(n: int, cfg: dict) -> tuple[float, float]:
    """Today a reader sees every entry, unless the key holds more than max_values_per_key."""
    readable = n <= cfg["max_values_per_key"]
    need = math.ceil(cfg["external_rollouts"] / USABLE_GROUPS_PER_PEER_STEP)
    base = max(MIN_BASE_NODES, math.ceil(BASE_SHARE * n))
    return float(readable and n - 1 >= need), float(readable and base - 1 >= 2)


# ---- the run ------------------------------------------------------------------------------------

def slope(rows: list[dict], arm: str, metric: str, lo: int, hi: int) -> float | None:
    """log-log slope of a per-node figure between N = lo and N = hi."""
    by_n = {r["n"]: r[arm][metric] for r in rows}
    if lo not in by_n or hi not in by_n:
        return None
    return loglog_slope([(lo, by_n[lo]), (hi, by_n[hi])])


def simulate(ns: list[int], trials: int, seed: int, console: Console, target: int = TARGET_PER_SHARD) -> list[dict]:
    cfg = {**config_intervals(), "target_per_shard": target}
    rows = []
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("simulating", total=len(ns))
        for n in ns:
            progress.update(task, description=f"N = {n:,}")
            row = {"n": n, "shard_bits": next_bits(0, n, target=target)}
            for arm in ("today", "sharded"):
                row[arm] = arm_costs(arm, n, cfg, np.random.default_rng(seed))
            row["today"]["p_rollouts"], row["today"]["p_partners"] = today_probabilities(n, cfg)
            row["sharded"]["p_rollouts"] = p_finds_rollouts(n, cfg, trials, random.Random(seed))
            row["sharded"]["p_partners"] = p_finds_partners(n, trials, random.Random(seed + 1), target)
            rows.append(row)
            progress.advance(task)
    return rows


def short(x: float) -> str:
    """A figure in at most 6 characters: 12.3, 4.56k, 7.89M, 1.23G."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.3g}{suffix}"
    return f"{x:.3g}"


def table(rows: list[dict]) -> Table:
    t = Table(title="per node per minute (simulated)", box=None, pad_edge=False)
    for name in ("N", "arm", "B in", "B out", "req", "entries", "max/med", "P roll", "P part"):
        t.add_column(name, justify="right", no_wrap=True)
    for r in rows:
        for arm in ("today", "sharded"):
            a = r[arm]
            t.add_row(f"{r['n']:,}", arm, short(a["in_bytes"]), short(a["out_bytes"]), short(a["requests"]),
                      short(a["entries"]), f"{a['busiest_over_median']:.2f}", f"{a['p_rollouts']:.4f}",
                      f"{a['p_partners']:.4f}")
    return t


def slopes(rows: list[dict]) -> dict:
    out = {}
    for arm in ("today", "sharded"):
        for metric in ("bytes", "requests", "entries"):
            out[f"{arm}/{metric}"] = {"1000-100000": slope(rows, arm, metric, 1000, 100_000),
                                      "10-2048": slope(rows, arm, metric, 10, 2048)}
    return out


def view(result: dict) -> Group:
    """The table, then each slope between the two N ranges."""
    lines = [f"slope {name:17} 1,000-100,000: {s['1000-100000']}   10-2,048: {s['10-2048']}"
             for name, s in result["slopes"].items()]
    return Group(table(result["rows"]), *lines)


def plot(result: dict, path: Path) -> None:
    """Per-node MB per minute against N, mean and busiest node, both arms (skipped without matplotlib)."""
    rows = result["rows"]
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(7, 4))
    ns = [r["n"] for r in rows]
    for arm, colour in (("today", "tab:red"), ("sharded", "tab:blue")):
        ax.plot(ns, [(r[arm]["in_bytes"] + r[arm]["out_bytes"]) / 1e6 for r in rows], "o-", color=colour, label=f"{arm}: mean node")
        ax.plot(ns, [r[arm]["busiest_bytes"] / 1e6 for r in rows], "x--", color=colour, label=f"{arm}: busiest node")
    ax.set(xscale="log", yscale="log", xlabel="swarm size N", ylabel="MB per node per minute (in + out)",
           title="DHT traffic per node, simulated (scripts/bench/scale_sim.py)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ns", type=int, nargs="+", default=list(DEFAULT_NS))
    parser.add_argument("--trials", type=int, default=20_000, help="Monte Carlo trials per N")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--target", type=int, default=TARGET_PER_SHARD,
                        help=f"entries a shard should hold (the node's shards.TARGET_PER_SHARD: {TARGET_PER_SHARD})")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "scale_sim.json")
    args = parser.parse_args(argv)
    console = Console(width=80)
    started = time.monotonic()
    rows = simulate(args.ns, args.trials, args.seed, console, args.target)
    result = {"simulated": True, "command": "python " + " ".join(["scripts/bench/scale_sim.py", *(argv or sys.argv[1:])]),
              "trials": args.trials, "seed": args.seed, "target_per_shard": args.target, "step_s": STEP_S, "rows": rows, "slopes": slopes(rows),
              "seconds": round(time.monotonic() - started, 1)}
    write_results(result, args.out, args.out.with_suffix(".png"), plot, view, console)
    return 0


if __name__ == "__main__":
    sys.exit(main())
