"""The honest side of a hostile-peer run: the swarm's config, status sampling, memory, throughput.

Shared by tests/integration/test_hostile_peer_cannot_stop_training.py and
scripts/experiments/hostile_harness.py. No pytest here.
"""
from __future__ import annotations

import json
import sqlite3
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import yaml

from swarmnode.config import bundled_config_path
from swarmnode.home import NodeHome, read_runtime
from swarmnode.node.local_swarm import child_environment, python_module_command
from swarmnode.status.client import NoDaemon, fetch

# The folder that holds the swarmnode package (the repository in a checkout): the hostile peer
# child runs with it first on PYTHONPATH, so it imports the same swarmnode as its parent.
ROOT = Path(__file__).resolve().parents[3]

# The honest nodes: the bundled policy, small SAPO steps (4 local + 4 external groups of 4), one
# thread each, quick gossip, and small bounds so that floods reach them within seconds.
HONEST_OVERRIDES: dict[str, dict[str, Any]] = {
    "model": {"name_or_path": "bundled:tiny-policy"},
    "training": {"local_rollouts": 4, "external_rollouts": 4, "external_wait_s": 1, "samples_per_prompt": 4,
                 "eval_every": 1000, "eval_size": 8, "checkpoint_every": 1000, "threads": 1},
    # Each attack's persona lives a few seconds: the victim looks for new peers every second (the
    # default, rollouts.discover_interval_s = 10, would miss most of them).
    "rollouts": {"fetch_interval_s": 0.5, "announce_interval_s": 1, "discover_interval_s": 1, "strike_limit": 20,
                 "ignore_s": 600},
    "limits": {"max_peers": 64, "max_tracked_senders": 64, "max_values_per_key": 64, "serve_requests_per_s": 2,
               "serve_burst": 4},
}


def write_honest_config(path: Path, extra: dict[str, dict[str, Any]] | None = None) -> Path:
    """configs/local.yaml with HONEST_OVERRIDES (and `extra`) merged in, written to `path`."""
    config = yaml.safe_load(bundled_config_path("local.yaml").read_text(encoding="utf-8"))
    for overrides in (HONEST_OVERRIDES, extra or {}):
        for section, values in overrides.items():
            config.setdefault(section, {}).update(values)
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def node_pids(home: NodeHome) -> list[int]:
    runtime = read_runtime(home)
    return [p for p in [runtime.get("pid")] + [c.get("pid") for c in runtime.get("children", [])] if isinstance(p, int)]


def rss_mib(home: NodeHome) -> float | None:
    """RSS of the daemon process plus its children (p2pd), MiB; None when it is not running."""
    total = 0
    pids = node_pids(home)
    if not pids:
        return None
    for pid in pids:
        try:
            total += psutil.Process(pid).memory_info().rss
        except psutil.Error:
            if pid == pids[0]:
                return None
    return total / 2**20


def status(home: NodeHome, timeout: float = 3.0) -> dict[str, Any] | None:
    url = read_runtime(home).get("status_url")
    if not url:
        return None
    try:
        return fetch(url, timeout=timeout)
    except NoDaemon:
        return None


def groups_stored_from(home: NodeHome, sender: str) -> int | None:
    """Groups from `sender` in the node's rollouts.sqlite (accepted ones; a count no eviction resets)."""
    path = home.root / "rollouts.sqlite"
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=2.0) as db:
            return db.execute("SELECT COUNT(*) FROM received_groups WHERE sender = ?", (sender,)).fetchone()[0]
    except sqlite3.Error:
        return None


@dataclass
class Sample:
    t: float  # time.time()
    alive: bool
    phase: str | None
    steps: int
    honest_accepted: int  # groups accepted from the honest peer, by its standing in status (reset if evicted)
    honest_stored: int | None  # the same counted in rollouts.sqlite (never reset)
    rss_mib: float | None
    rejected: dict[str, int]
    rejected_by_sender: dict[str, dict[str, int]]
    limits: dict[str, Any]
    honest_standing: dict[str, Any]
    peers: int
    rollouts: dict[str, Any]


def sample(home: NodeHome, honest_id: str, process: subprocess.Popen | None = None) -> Sample:
    s = status(home)
    alive = (process is None or process.poll() is None) and s is not None
    if s is None:
        return Sample(time.time(), alive, None, 0, 0, None, rss_mib(home), {}, {}, {}, {}, 0, {})
    rollouts = s.get("rollouts") or {}
    standing = (rollouts.get("senders") or {}).get(honest_id, {})
    training = s.get("training") or {}
    return Sample(
        t=time.time(), alive=alive, phase=training.get("phase"), steps=training.get("steps") or 0,
        honest_accepted=standing.get("accepted", 0), honest_stored=groups_stored_from(home, honest_id), rss_mib=rss_mib(home),
        rejected=dict(s["messages"]["rejected"]), rejected_by_sender=s["messages"]["rejected_by_sender"],
        limits=dict(s.get("limits") or {}), honest_standing=dict(standing), peers=len(s.get("peers", [])),
        rollouts={k: v for k, v in rollouts.items() if k != "senders"},
    )


@dataclass
class Monitor:
    """Samples the victim's status every `interval` seconds on a thread, until stopped."""

    home: NodeHome
    honest_id: str
    process: subprocess.Popen | None = None
    interval: float = 1.0
    samples: list[Sample] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append(sample(self.home, self.honest_id, self.process))
            self._stop.wait(self.interval)

    def __enter__(self) -> "Monitor":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def between(self, t0: float, t1: float) -> list[Sample]:
        return [s for s in self.samples if t0 <= s.t <= t1 and s.phase is not None]


def rates(samples: list[Sample]) -> dict[str, float | None]:
    """Honest groups accepted per second (rollouts.sqlite), training steps per second, and honest
    groups per training step over `samples`. A node pulls groups as its steps need them, so groups
    per step says whether the honest peer is still heard whatever share of the CPU is left."""
    live = [s for s in samples if s.phase is not None and s.honest_stored is not None]
    if len(live) < 2 or live[-1].t - live[0].t < 1e-3:
        return {"honest_groups_per_s": None, "steps_per_s": None, "honest_groups_per_step": None}
    dt = live[-1].t - live[0].t
    groups, steps = live[-1].honest_stored - live[0].honest_stored, live[-1].steps - live[0].steps
    return {"honest_groups_per_s": round(groups / dt, 3), "steps_per_s": round(steps / dt, 3),
            "honest_groups_per_step": round(groups / steps, 3) if steps > 0 else None}


def counter_delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: v - before.get(k, 0) for k, v in sorted(after.items()) if v - before.get(k, 0)}


def hostile_command(maddr: str, attacks: str, out: Path, *, swarm: str = "swarmnode-local", window_s: float = 10.0,
                    seconds: float = 5.0, identities: int = 2000, total_seconds: float = 0.0, transport: str = "hivemind",
                    extra: list[str] | None = None) -> list[str]:
    """The hostile peer's command line; `transport` is the victim swarm's network.transport."""
    return python_module_command(
        "swarmnode.testing.hostile.peer", "--initial-peer", maddr, "--swarm", swarm, "--window-s", str(window_s),
        "--attack", attacks, "--seconds", str(seconds), "--identities", str(identities),
        "--total-seconds", str(total_seconds), "--transport", transport, "--out", str(out), *(extra or []))


def start_hostile(command: list[str], log_path: Path) -> subprocess.Popen:
    """The hostile peer as a child process (child_environment: this swarmnode's checkout first on
    PYTHONPATH, so the child runs the same `swarmnode.testing.hostile`)."""
    log = open(log_path, "ab")
    try:
        return subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=child_environment())
    finally:
        log.close()


def run_hostile(command: list[str], out: Path, log_path: Path, timeout_s: float) -> tuple[dict[str, Any], str]:
    """Run the hostile peer to its end (killed if still running after timeout_s); returns its
    result (`out`) and the tail of its log. Fails the test if it exited non-zero or reported errors."""
    proc = start_hostile(command, log_path)
    try:
        rc = proc.wait(timeout=timeout_s)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    result = read_result(out)
    tail = log_path.read_text(errors="replace")[-4000:]
    assert rc == 0 and not result["errors"], f"the hostile peer failed (rc {rc}): {result['errors']}\n{tail}"
    return result, tail


def read_result(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"attacks": {}, "errors": {}}
