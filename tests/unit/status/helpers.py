"""Builders for status documents, shared by the status, cli and node tests."""
import copy

from prometheus_client import generate_latest

from swarmnode.protocol.generated import peer_record_pb2
from swarmnode.status.snapshot import (
    ClockSection,
    JoinState,
    MachineSection,
    NodeSection,
    SwarmSection,
    WorkSections,
    build_status,
)
from swarmnode.status.prometheus import make_registry
from swarmnode.swarm.peers import MessageStats

SUMMARIES = {
    "enabled": True, "active": True, "base_fingerprint": "a1c04df6ea1c2c67", "sent": 12, "merged": 21, "fetched": 25,
    "rejected": {"norm_too_large": 2, "non_finite": 1}, "skipped_other_base": 4, "stale_dropped": 1,
    "bytes_per_summary": 43_520.0, "dense_bytes": 4 * 1_052_672, "compression_ratio": 96.75, "outer_steps": 12,
    "outer_steps_this_run": 5,
    "last_merge_age_s": 7.5, "merge_seconds": 3.25, "merge_cpu_seconds": 1.5, "partners_last": 2,
    "robust_merge": True, "skipped": {"low_trust": 5, "against_direction": 2, "repeated_summary": 1}, "down_weighted": 9, "clipped": 14,
    "harmful": 3, "agreement_scale": 0.0312,
    "trust": {"12D3KooWGoodPeerAAAAAA": {"trust": 1.0, "score": 0.61, "judged": 12, "merged": 12, "skipped": 0,
                                         "harmful": 0, "agreement": 0.034},
              "12D3KooWBadPeerBBBBBB": {"trust": 0.0, "score": -0.61, "judged": 6, "merged": 0, "skipped": 6,
                                        "harmful": 4, "agreement": -0.031}},
}


def status(peers=(), protocol_versions=None, incompatible_peers=(), **work):
    """A status document of a running CPU node without a model; `work` are WorkSections' parts."""
    return build_status(
        NodeSection(peer_id="12D3KooWTest", swarm="s", software_version="0.1.0", protocol_version=1,
                    state=peer_record_pb2.NODE_STATE_RUNNING, started_at=1000.0, protocol_versions=protocol_versions),
        ClockSection(now=1100.0, window=1, window_s=30.0),
        SwarmSection(multiaddrs=["/ip4/127.0.0.1/tcp/1/p2p/12D3KooWTest"], client_mode=False, routing_table_size=0,
                     join=JoinState((), True, 0, None), peers=list(peers), stats=MessageStats(),
                     incompatible_peers=list(incompatible_peers)),
        MachineSection(device=peer_record_pb2.DeviceInfo(kind="cpu"), capability=peer_record_pb2.Capability(),
                       model_fingerprint=""),
        WorkSections(**work),
    )


# A training node's work sections with every part the Prometheus view reads (tests/unit/status).
TRAINING = {
    "running": True, "phase": "training", "model": "bundled:tiny-policy", "policy_version": 1234, "steps": 1240,
    "steps_this_run": 640, "steps_without_spread": 9, "steps_without_spread_in_a_row": 2,
    "reward_mean": 0.6875, "local_reward_mean": 0.71875, "external_trained": 8120, "external_pool": 12,
    "heldout_accuracy": 0.5625, "generate_tokens_per_s": 1534.25, "train_samples_per_s": 88.5,
    "train_tokens_per_s": 2210.0, "seconds_per_step": 1.18, "slowdown": 1.0,
    "staleness_histogram": {"0": 127, "1": 1475, "2": 300}, "staleness_local": {"0": 95, "1": 1029},
    "staleness_external": {"0": 32, "1": 446, "2": 300},
    "step_seconds_histogram": {"buckets": {"0.5": 0, "1": 700, "2": 1230, "5": 1239}, "count": 1240, "sum": 1463.25},
    "dropped_stale": 3, "external_waits": 12,
    "external_waits_skipped": 40, "groups_generated": 4960, "generator_idle_share": 0.285,
    "trainer_idle_share": 0.0153, "error": None,
    "gpu_memory": {"device": "cuda:0", "in_use_bytes": 2**30, "peak_bytes": 2**31, "total_bytes": 2**34},
}
ROLLOUTS = {
    "batches_published": 620, "groups_published": 4960, "bytes_published": 9_000_000, "announcements": 620,
    "batches_fetched": 1500, "bytes_fetched": 20_000_000, "groups_accepted": 8400, "groups_rejected": 7,
    "groups_rejected_by_reason": {"prompt_mismatch": 4, "too_long": 3}, "groups_skipped_other_task": 0, "fetch_failures": 2, "fetch_requests": 3000, "empty_fetches": 1500,
    "fetches_deferred": 4, "requests_served": 2900, "requests_held": 800, "peers_ignored": 1, "store_errors": 0,
    "bytes_per_batch": 14516.1, "latency_p50_s": 0.41, "latency_p99_s": 2.3,
    "latency_histogram": {"buckets": {"0.25": 10, "0.5": 900, "1": 1400, "2": 1480, "5": 1499}, "count": 1500,
                          "sum": 700.5},
    "gossip_time_share": 0.0312, "gossip_busy_share": 0.2, "swarm_cpu_s": 46.8,
    "senders": {"12D3KooWPeerOne": {"accepted": 5000, "rejected": 0, "quality": 0.99, "ignored": False},
                "12D3KooWPeerBad": {"accepted": 0, "rejected": 9, "quality": 0.09, "ignored": True}},
}
STORAGE = {"rollouts_bytes": 3 * 2**20, "metrics_bytes": 2**20, "checkpoint_failures": 1, "last_checkpoint": "v00001200",
           "last_checkpoint_error": "OSError: disk full", "last_maintenance": {"at": 1090.0, "seconds": 0.25}}
LIMITS = {"peers": 3, "peers_evicted": 0, "tracked_senders": 2, "senders_evicted": 0, "rejection_senders_evicted": 0,
          "values_over_key_cap": 1, "serve_refused": 2, "accept_deferred": 3, "fetch_waits": 4, "held_refused": 0}
RELAY_LOAD = {"reservations": 3, "capacity": 32, "refused_full": 4, "forwards_in_flight": 1, "max_forwards": 128,
              "forwards_last_minute": 40}
NETWORK = {
    "transport": "hivemind", "reachability": "private", "reachability_source": "dial-back", "checks": 5,
    "relays": ["12D3KooWRelay"], "my_relays": ["12D3KooWRelay"], "relaying": False, "relay_load": RELAY_LOAD,
    "direct_peers": ["12D3KooWPeerOne"], "relayed_for": [],
    "counters": {"relayed_requests": 40, "forwarded": 7, "forwarded_bytes": 70_000, "failed_requests": 2,
                 "dht_gets": 100, "dht_stores": 50, "dht_entries_read": 300, "dht_entries_judged": 320},
}


def training_status(**work):
    """A status document of a training node with every work section filled (copies: a test may
    change them); `work` replaces WorkSections' parts."""
    parts = {"training": TRAINING, "rollouts": ROLLOUTS, "storage": STORAGE, "limits": LIMITS,
             "summaries": SUMMARIES, "network": NETWORK, **work}
    return status(**copy.deepcopy(parts))


def bootstrap_status():
    """A node without a model, relaying for nodes behind NAT (what `swarmnode bootstrap` serves)."""
    network = {**NETWORK, "reachability": "public", "relays": [], "my_relays": [], "relaying": True,
               "counters": {"forwarded": 12, "forwarded_bytes": 90_000, "dht_gets": 10, "dht_stores": 5}}
    limits = {**LIMITS, "tracked_senders": 0}
    return status(network=copy.deepcopy(network), limits=limits)


def scrape_text(doc: dict) -> str:
    """What /metrics serves for the status document `doc`."""
    return generate_latest(make_registry(lambda: doc)).decode()


def scrape_lines(doc: dict) -> list[str]:
    return scrape_text(doc).splitlines()
