"""The node daemon and its I/O loops: each loop or thread has one job and one owner.

The daemon and its loops:

- daemon.py: `Node`, the event loop that owns the transport, the peer-record loops, the status
  server and every other loop below (started in `run`, cancelled on shutdown).
- network.py: `NetworkService`, whether peers can dial this node (dial-back checks) and what it
  does about it (relay reservations, DHT client mode, the addresses it gives out);
  `make_transport`, hivemind's transport wrapped in swarm/relaying/routed_transport.py's relaying.
- dht_reads.py: `read_spread` (one kind's keys of this window and the last, sorted by shard),
  `newest_per_peer`
- joining.py: `Joiner`, joining through the initial peers (and again when every peer is gone).
- runner.py: `run_daemon`, `swarmnode run`'s logging, identity and event loop around a Node.
- preflight.py: what `swarmnode run` checks before it starts anything (`probe_start` does the
  I/O, `start_problems` turns what it found into one line per problem).
- home_model.py: before start, whether the home's newest checkpoint belongs to the configured model.
- logs.py: the console and `<home>/logs/node.log` (`setup_logging`, rotation, tracebacks to the
  file only), the start line and `RecordedRun` (did the last run end cleanly?), `progress_loop`.
- peer_log.py: `PeerLog`, peers joining and leaving and peers of another base, told once each.
- scheduling.py: `plan_loop`, once per swarm window a new plan for the runner's quotas
  (`current_plan`, `plan_limits`, `peer_supplies`; the math is in swarmnode/scheduler).
- gossip/ (its own map): `RolloutGossip` (this node's rollout batches out, peers' in) and
  `SummaryGossip` (gradient summaries out and in), two payload kinds on one per-peer scaffold
  (`PeerFetcher`, `PeerServer`, `Announcer`) with one injected `PeerStandings`. Peers' batches
  become groups in swarmnode/trainer/intake.py, not here.
- storage.py: `maintain_stores` (retention pass) and `storage_status` (status.storage).
- capability.py: `detect_device`, `matmul_gflops`; leftovers.py: cleaning up after a killed daemon.
- local_swarm.py: `LocalSwarm`, N real nodes on 127.0.0.1 (tests, experiments).

The node's training, on its own thread:

- training/ (its own map): `TrainingService` (the trainer thread and what the node uses of
  training), building it from the config, what is done with each step, and its status.
"""
from __future__ import annotations

from typing import Any

__all__ = ["NetworkService", "Node", "make_transport"]


def __getattr__(name: str) -> Any:
    # Imported on first use, so that importing swarmnode.node.<module> (the runner of a model-less
    # bootstrap node, say) does not load the daemon and, through it, torch and the trainer.
    if name in __all__:
        from swarmnode.node import daemon, network

        return getattr(daemon if name == "Node" else network, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
