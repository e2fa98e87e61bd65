"""The status document a daemon serves at /status (schema "swarmnode.status/1").

Stable top-level fields (documented in docs/status.md): peer_id, multiaddrs (list of str),
peers (list of objects with peer_id), and the rest below. `build_status` assembles the document
from sections, each made by its owner: `NodeSection`, `ClockSection`, `SwarmSection`,
`MachineSection` and `WorkSections` (training, rollouts, storage, limits, summaries, network). Fields later issues fill (training)
are present from the start with `running: false` and null values; `summaries` always has every
key of empty_summaries_status().
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from swarmnode.protocol import RecordOrigin
from swarmnode.protocol.generated import peer_record_pb2
from swarmnode.protocol.versions import VersionRange, who_should_upgrade
from swarmnode.swarm.peers import IncompatiblePeer, MessageStats, PeerEntry

STATUS_SCHEMA = "swarmnode.status/1"

TRAINING_NOT_RUNNING: dict[str, Any] = {
    "running": False,
    "phase": "no model configured",
    "model": None,
    "policy_version": None,
    "steps": None,
    "reward_mean": None,
    "local_reward_mean": None,
    "external_trained": None,
    "external_trained_by_task": None,
    "own_success": None,
    "external_pool": None,
    "heldout_accuracy": None,
    "generate_tokens_per_s": None,
    "train_samples_per_s": None,
    "train_tokens_per_s": None,
    "seconds_per_step": None,
    "slowdown": None,
    "staleness_histogram": None,
    "staleness_local": None,
    "staleness_external": None,
    "step_seconds_histogram": None,
    "dropped_stale": None,
    "groups_generated": None,
    "external_trained_by_sender": None,
    "plan": None,
    "generator_idle_share": None,
    "trainer_idle_share": None,
    "gpu_memory": None,
    "error": None,
}


# A node without a model keeps no stores and writes no checkpoints.
STORAGE_NONE: dict[str, Any] = {
    "rollouts_bytes": 0,
    "metrics_bytes": 0,
    "checkpoint_failures": 0,
    "last_checkpoint_error": None,
    "last_checkpoint": None,
    "last_maintenance": None,
}


# The keys of the `summaries` object, in the order docs/status.md lists them.
SUMMARIES_KEYS = (
    "enabled", "active", "base_fingerprint", "sent", "merged", "fetched", "rejected", "skipped_other_base",
    "stale_dropped", "bytes_per_summary", "dense_bytes", "compression_ratio", "outer_steps", "outer_steps_this_run",
    "last_merge_age_s", "merge_seconds", "merge_cpu_seconds", "partners_last", "robust_merge", "skipped",
    "down_weighted", "clipped", "harmful", "agreement_scale", "trust",
)


def empty_summaries_status() -> dict[str, Any]:
    """The `summaries` object of a node without a model: every key, nothing sent or merged."""
    return {
        "enabled": False,
        "active": False,
        "base_fingerprint": "",
        "sent": 0,
        "merged": 0,
        "fetched": 0,
        "rejected": {},
        "skipped_other_base": 0,
        "stale_dropped": 0,
        "bytes_per_summary": None,
        "dense_bytes": 0,
        "compression_ratio": None,
        "outer_steps": 0,
        "outer_steps_this_run": 0,
        "last_merge_age_s": None,
        "merge_seconds": 0.0,
        "merge_cpu_seconds": 0.0,
        "partners_last": 0,
        "robust_merge": False,
        "skipped": {},
        "down_weighted": 0,
        "clipped": 0,
        "harmful": 0,
        "agreement_scale": None,
        "trust": {},
    }


def summaries_status(summaries: dict[str, Any] | None) -> dict[str, Any]:
    """The node's summaries dict with every documented key present (missing ones empty)."""
    out = empty_summaries_status()
    if summaries is not None:
        out.update(summaries)
        out["rejected"] = dict(out.get("rejected") or {})
        out["skipped"] = dict(out.get("skipped") or {})
    return out


@dataclass(frozen=True)
class JoinState:
    initial_peers: tuple[str, ...]
    joined: bool
    attempts: int
    last_error: str | None


def state_name(state: int) -> str:
    return peer_record_pb2.NodeState.Name(state).removeprefix("NODE_STATE_").lower()


def device_to_dict(device: peer_record_pb2.DeviceInfo) -> dict[str, Any]:
    return {
        "kind": device.kind,
        "name": device.name,
        "accelerator_count": device.accelerator_count,
        "memory_bytes": device.memory_bytes,
        "cpu_cores": device.cpu_cores,
    }


# A node's measured speeds (scheduler.SpeedMeter), in the status document with these many decimals.
SPEED_DIGITS = {"generate_tokens_per_s": 1, "train_samples_per_s": 2, "train_tokens_per_s": 1, "seconds_per_step": 3}


def speed_figures(speeds: Mapping[str, float | None]) -> dict[str, float | None]:
    """The SPEED_DIGITS keys of `speeds`, rounded for the status document (None stays None)."""
    return {k: None if speeds.get(k) is None else round(speeds[k], digits) for k, digits in SPEED_DIGITS.items()}


def capability_to_dict(capability: peer_record_pb2.Capability) -> dict[str, Any]:
    """A PeerRecord's capability; a speed is 0 until that node has measured it."""
    return {"matmul_gflops": round(capability.matmul_gflops, 3),
            **speed_figures({k: getattr(capability, k) for k in SPEED_DIGITS})}


REACHABILITY_NAMES = {0: "unknown", 1: "public", 2: "private"}  # peer_record.proto Reachability


def peer_to_dict(entry: PeerEntry, now: float) -> dict[str, Any]:
    r = entry.record
    return {
        "peer_id": r.peer_id,
        "age_s": round(now - entry.first_seen, 3),
        "last_seen_s": round(now - entry.last_seen, 3),
        "record_age_s": round(now - r.timestamp, 3),
        "expires_in_s": round(r.expires_at - now, 3),
        "state": state_name(r.state),
        "software_version": r.software_version,
        "protocol_versions": [r.min_protocol_version, r.max_protocol_version],
        "model_fingerprint": r.model_fingerprint,
        "base_fingerprint": getattr(r, "base_fingerprint", ""),
        "client_mode": r.client_mode,
        "multiaddrs": list(r.multiaddrs),
        "reachability": REACHABILITY_NAMES.get(r.reachability, "unknown"),
        "relays": list(r.relays),
        "device": device_to_dict(r.device),
        "capability": capability_to_dict(r.capability),
        # The figures the scheduler plans with, at the top of each entry (also under capability).
        **{k: v for k, v in capability_to_dict(r.capability).items() if k != "matmul_gflops"},
    }


def incompatible_to_dict(peer: IncompatiblePeer, ours: VersionRange, now: float) -> dict[str, Any]:
    """A peer of protocol versions this node does not speak, and who should upgrade."""
    return {"peer_id": peer.peer_id, "protocol_versions": list(peer.versions),
            "software_version": peer.software_version, "upgrade": who_should_upgrade(ours, peer.versions),
            "expires_in_s": round(peer.expires_at - now, 3)}


@dataclass(frozen=True)
class NodeSection:
    """Who this node is: its ids, versions, state and start time (status `peer_id` .. `started_at`)."""

    peer_id: str
    swarm: str
    software_version: str
    protocol_version: int
    state: int | str
    started_at: float
    protocol_versions: VersionRange | None = None  # default: protocol_version alone
    role: str = "node"  # "bootstrap": started by `swarmnode bootstrap` (no model, serves the swarm)

    @property
    def versions(self) -> VersionRange:
        return self.protocol_versions or (self.protocol_version, self.protocol_version)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": STATUS_SCHEMA,
            "peer_id": self.peer_id,
            "swarm": self.swarm,
            "software_version": self.software_version,
            "protocol_version": self.protocol_version,
            "protocol_versions": list(self.versions),
            "role": self.role,
            "state": self.state if isinstance(self.state, str) else state_name(self.state),
            "started_at": self.started_at,
        }


@dataclass(frozen=True)
class ClockSection:
    """Swarm time when the document was made, and its window (status `dht_time`, `window`, `window_s`)."""

    now: float
    window: int
    window_s: float


@dataclass(frozen=True)
class SwarmSection:
    """How this node sits in the swarm: its addresses, the join, the peers and the messages seen."""

    multiaddrs: list[str]
    client_mode: bool
    routing_table_size: int
    join: JoinState
    peers: list[PeerEntry]
    stats: MessageStats
    incompatible_peers: list[IncompatiblePeer] = field(default_factory=list)
    other_window_peers: list[RecordOrigin] = field(default_factory=list)

    def to_dict(self, now: float, versions: VersionRange) -> dict[str, Any]:
        join = self.join
        return {
            "multiaddrs": self.multiaddrs,
            "client_mode": self.client_mode,
            "routing_table_size": self.routing_table_size,
            "join": {"initial_peers": list(join.initial_peers), "joined": join.joined, "attempts": join.attempts,
                     "last_error": join.last_error},
            "peers": [peer_to_dict(e, now) for e in self.peers],
            "incompatible_peers": [incompatible_to_dict(p, versions, now) for p in self.incompatible_peers],
            "other_window_peers": [{"peer_id": o.peer_id, "window_s": o.window_s,
                                    "expires_in_s": round(o.expires_at - now, 3)} for o in self.other_window_peers],
            "messages": self.stats.counts(),
        }


@dataclass(frozen=True)
class MachineSection:
    """What this node runs on and runs (status `device`, `capability`, `model_fingerprint`)."""

    device: peer_record_pb2.DeviceInfo
    capability: peer_record_pb2.Capability
    model_fingerprint: str

    def to_dict(self) -> dict[str, Any]:
        return {"device": device_to_dict(self.device), "capability": capability_to_dict(self.capability),
                "model_fingerprint": self.model_fingerprint}


@dataclass(frozen=True)
class WorkSections:
    """The parts each owner makes (None: that part does not run here; its documented default is shown)."""

    training: dict[str, Any] | None = None  # TrainingService.snapshot()
    rollouts: dict[str, Any] | None = None  # RolloutGossip.snapshot()
    storage: dict[str, Any] | None = None  # node/storage.py storage_status
    limits: dict[str, int] | None = None  # the daemon's per-peer bounds
    summaries: dict[str, Any] | None = None  # SummaryGossip.snapshot()
    network: dict[str, Any] | None = None  # NetworkService.snapshot()

    def to_dict(self) -> dict[str, Any]:
        return {
            "training": dict(self.training if self.training is not None else TRAINING_NOT_RUNNING),
            "rollouts": self.rollouts,
            "storage": dict(self.storage if self.storage is not None else STORAGE_NONE),
            "limits": dict(self.limits or {}),
            "summaries": summaries_status(self.summaries),
            "network": self.network,
        }


def build_status(node: NodeSection, clock: ClockSection, swarm: SwarmSection, machine: MachineSection,
                 work: WorkSections = WorkSections()) -> dict[str, Any]:
    """The status document, its sections in the documented order."""
    return {
        **node.to_dict(),
        "uptime_s": round(clock.now - node.started_at, 3),
        "dht_time": clock.now,
        "window": clock.window,
        "window_s": clock.window_s,
        **swarm.to_dict(clock.now, node.versions),
        **machine.to_dict(),
        **work.to_dict(),
    }
