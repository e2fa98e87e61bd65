"""Watch a node from inside its namespace: one JSON line per poll of its status endpoint.

    ip netns exec <ns> python -m swarmnode.testing.internet.probe --home H [--interval 0.5]

A line holds the wall time and what an experiment reads off a node: peers, steps, groups
accepted and batch latency per sender, summaries judged per peer, reachability. A poll the
daemon does not answer prints {"t": ..., "up": false}; the probe outlives daemon restarts.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from swarmnode.home import NodeHome
from swarmnode.status.client import NoDaemon, fetch, status_url_for_home


def digest(status: dict[str, Any], now: float) -> dict[str, Any]:
    """The few fields experiments need, from a status document."""
    senders = (status.get("rollouts") or {}).get("senders") or {}
    training = status.get("training") or {}
    trust = (status.get("summaries") or {}).get("trust") or {}
    return {
        "t": now, "up": True, "peer_id": status.get("peer_id"), "peers": len(status.get("peers") or []),
        "steps": training.get("steps"), "policy_version": training.get("policy_version"),
        "accepted": {peer: s.get("accepted", 0) for peer, s in senders.items()},
        "latency": {peer: [s.get("latency_p50_s"), s.get("latency_p99_s")] for peer, s in senders.items()},
        "judged": {peer: t.get("judged", 0) for peer, t in trust.items()},
        "reachability": (status.get("network") or {}).get("reachability"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--interval", type=float, default=0.5)
    args = parser.parse_args(argv)
    home = NodeHome(args.home)
    while True:
        now = time.time()
        try:
            line = digest(fetch(status_url_for_home(home), timeout=2.0), now)
        except (NoDaemon, OSError, ValueError):
            line = {"t": now, "up": False}
        print(json.dumps(line), flush=True)
        time.sleep(max(0.0, args.interval - (time.time() - now)))


if __name__ == "__main__":
    sys.exit(main())
