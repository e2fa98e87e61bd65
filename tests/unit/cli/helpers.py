"""A realistic status document of a training node in a 4-node swarm, for the CLI's snapshot tests."""
from swarmnode.status.snapshot import TRAINING_NOT_RUNNING
from tests.unit.status.helpers import SUMMARIES, status

PEER_ID = "12D3KooWQnwEGNqcM2nAcPtRR9rAX8Hrg4k6kvQZJSYtk9PvBQAs"  # a real id's length: 52 characters
ADDRESSES = [f"/ip4/127.0.0.1/tcp/43567/p2p/{PEER_ID}", f"/ip4/198.18.17.203/tcp/43567/p2p/{PEER_ID}"]
BASE = "a1c04df6ea1c2c67"

TRAINING = {
    **TRAINING_NOT_RUNNING, "running": True, "phase": "training", "model": "bundled:tiny-policy", "policy_version": 1234,
    "steps": 1240, "reward_mean": 0.6875, "local_reward_mean": 0.71875, "external_trained": 8120,
    "external_trained_by_task": {"arith": 5000, "sort": 3120}, "own_success": {"arith": 0.75, "sort": 0.5},
    "external_pool": 12, "heldout_accuracy": 0.5625, "generate_tokens_per_s": 1534.25, "train_samples_per_s": 88.5,
    "train_tokens_per_s": 2210.0, "seconds_per_step": 1.18, "slowdown": 1.0,
    "staleness_histogram": {"0": 127, "1": 1475, "2": 300}, "staleness_local": {"0": 95, "1": 1029},
    "staleness_external": {"0": 32, "1": 446, "2": 300}, "dropped_stale": 3, "external_waits": 12, "external_waits_skipped": 40, "groups_generated": 4960,
    "external_trained_by_sender": {"12D3KooWPeerOne": 5000, "12D3KooWPeerTwo": 3120},
    "plan": {"local_rollouts": 3, "external_rollouts": 3, "external_wait_s": 0.017, "steps_per_window": 23.61,
             "reason": "slow: fewer so >= 24 steps fit a window; peers supply 180 groups/s"},
    "generator_idle_share": 0.285, "trainer_idle_share": 0.0153,
}
ROLLOUTS = {
    "batches_published": 620, "groups_published": 4960, "bytes_published": 9_000_000, "announcements": 620,
    "batches_fetched": 1500, "bytes_fetched": 20_000_000, "groups_accepted": 8400, "groups_rejected": 7,
    "groups_skipped_other_task": 0, "fetch_failures": 2, "peers_ignored": 0, "store_errors": 0,
    "bytes_per_batch": 14516.1, "latency_p50_s": 0.41, "latency_p99_s": 2.3, "gossip_time_share": 0.0312,
    "senders": {"12D3KooWPeerOne": {"accepted": 5000, "rejected": 0, "quality": 0.99, "ignored": False}},
}
STORAGE = {"rollouts_bytes": 3 * 2**20 + 2**19, "metrics_bytes": 2**20, "checkpoint_failures": 0, "last_checkpoint": "v00001200",
           "last_checkpoint_error": None, "last_maintenance": None}


def peer(i: int, state: str = "running") -> dict:
    return {"peer_id": f"12D3KooW{i:044d}", "age_s": 600.0 + i, "last_seen_s": 3.0, "record_age_s": 4.0,
            "expires_in_s": 50.0, "state": state, "base_fingerprint": BASE, "software_version": "0.1.0",
            "model_fingerprint": "f" * 16, "client_mode": False, "multiaddrs": [f"/ip4/127.0.0.1/tcp/4{i:04d}"],
            "device": {"kind": "cpu", "cpu_cores": 2}, "capability": {"matmul_gflops": 41.5}}


def realistic_status(**changes) -> dict:
    """A running, joined, training node with three peers; `changes` replace top-level fields."""
    doc = status(training=TRAINING, rollouts=ROLLOUTS, storage=STORAGE, summaries=SUMMARIES)
    doc.update(peer_id=PEER_ID, swarm="swarmnode-local", multiaddrs=ADDRESSES, uptime_s=1500.0, routing_table_size=3,
               join={"initial_peers": [ADDRESSES[0]], "joined": True, "attempts": 1, "last_error": None},
               peers=[peer(1), peer(2), peer(3, "joining")],
               messages={"accepted": {"peer_record": 310, "rollout_group": 8400},
                         "rejected": {"expired": 2, "unknown_key": 1}, "rejected_by_sender": {}})
    doc.update(changes)
    return doc
