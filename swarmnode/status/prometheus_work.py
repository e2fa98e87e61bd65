"""The Prometheus series of the node's work: training, rollout gossip, storage and the per-peer
limits (docs/status.md, "Prometheus"). A node without a model (a bootstrap node) has only
`swarmnode_training_running` 0 and its phase here, and the limits."""
from __future__ import annotations

from typing import Any, Iterator

from prometheus_client.core import Metric

from swarmnode.status.prometheus_families import Row, by_label, cumulative, family, from_table, histogram, one_hot

# status training.phase, with "failed: <why>" as failed (the reason is training.error).
TRAINING_PHASES = {"no model configured": "no_model", "loading model": "loading_model", "training": "training",
                   "done": "done", "stopped": "stopped", "failed": "failed"}
# Bounds (versions behind) of the staleness histogram of the groups trained.
STALENESS_BOUNDS = (0, 1, 2, 3, 4, 6, 8, 16)


def training_series(training: dict[str, Any]) -> Iterator[Metric]:
    phase = str(training.get("phase") or "")
    phase = TRAINING_PHASES.get(phase.split(":")[0], phase)
    yield one_hot("swarmnode_training_phase", "Training phase (status training.phase; failed: the reason is in "
                  "training.error): 1 for the current one", "phase", TRAINING_PHASES.values(), phase)
    yield family("swarmnode_training_running", "gauge", "1 while the trainer thread is training",
                 bool(training.get("running")))
    yield from from_table(training, TRAINING)
    origins = {(origin,): cumulative(training[key], STALENESS_BOUNDS)
               for origin, key in (("local", "staleness_local"), ("external", "staleness_external"))
               if training.get(key) is not None}
    if origins:
        yield histogram("swarmnode_training_staleness_versions", "Rollout groups trained, by how many policy "
                        "versions behind they were (origin: this node's own groups, or peers')", origins, ["origin"])
    if training.get("step_seconds_histogram") is not None:
        yield histogram("swarmnode_training_step_seconds", "Wall seconds of each training step that trained, the "
                        "training.slowdown pause included", {(): training["step_seconds_histogram"]})
    yield from from_table(training.get("gpu_memory") or {}, GPU_MEMORY)


def rollouts_series(rollouts: dict[str, Any] | None) -> Iterator[Metric]:
    """Rollout gossip (none on a node without a model)."""
    if rollouts is None:
        return
    yield from from_table(rollouts, ROLLOUTS)
    if rollouts.get("groups_rejected_by_reason") is not None:
        # Its own name: the unlabelled total above is its sum, and one name carries one label set.
        yield by_label("swarmnode_rollouts_groups_rejected_by_reason", "counter", "Peers' rollout groups that "
                       "failed a check, by reason", "reason", rollouts["groups_rejected_by_reason"])
    if rollouts.get("latency_histogram") is not None:
        yield histogram("swarmnode_rollouts_latency_seconds", "Publish-to-accepted latency of peers' rollout "
                        "batches (signed by the peer to accepted here), seconds", {(): rollouts["latency_histogram"]})
    senders = rollouts.get("senders") or {}
    yield by_label("swarmnode_rollouts_senders", "gauge", "Peers whose rollout groups this node judged, by "
                   "standing (ignored: over the strike limit)", "standing",
                   {"ignored": sum(bool(v.get("ignored")) for v in senders.values()),
                    "active": sum(not v.get("ignored") for v in senders.values())})


def storage_series(storage: dict[str, Any], limits: dict[str, Any]) -> Iterator[Metric]:
    yield from from_table(storage, STORAGE)
    maintenance = storage.get("last_maintenance") or {}
    yield from from_table(maintenance, {"seconds": ("swarmnode_storage_last_maintenance_seconds", "gauge",
                                                    "Duration of the last retention pass, seconds")})
    yield from from_table(limits, LIMITS)


TRAINING: dict[str, Row] = {
    # The counter is this process's steps: `steps` continues the checkpoint's count, so after a
    # restart it would not start from 0 and Prometheus would count the restored steps again.
    "steps_this_run": ("swarmnode_training_steps", "counter", "Training steps this daemon took since it started"),
    "steps": ("swarmnode_training_steps_across_restarts", "gauge", "Training steps of this home's training, "
              "across restarts (continues the checkpoint's count)"),
    "steps_without_spread": ("swarmnode_training_steps_without_spread", "counter", "Training steps skipped: every "
                             "group's rewards were equal, so no gradient"),
    "steps_without_spread_in_a_row": ("swarmnode_training_steps_without_spread_in_a_row", "gauge", "Such steps "
                                      "since the last one that trained (from 50 on the node learns nothing)"),
    "policy_version": ("swarmnode_training_policy_version", "gauge", "Policy version of the local trainer"),
    "reward_mean": ("swarmnode_training_reward_mean", "gauge", "Mean reward of the last 20 training batches"),
    "local_reward_mean": ("swarmnode_training_local_reward_mean", "gauge", "Mean reward of this node's own groups "
                          "in the last 20 batches"),
    "heldout_accuracy": ("swarmnode_training_heldout_accuracy", "gauge", "Greedy accuracy on held-out task items"),
    "generate_tokens_per_s": ("swarmnode_training_generate_tokens_per_second", "gauge", "Tokens generated per "
                              "second of generation (smoothed, slowdown included)"),
    "train_samples_per_s": ("swarmnode_training_train_samples_per_second", "gauge", "Samples trained per second "
                            "of training (smoothed, slowdown included)"),
    "train_tokens_per_s": ("swarmnode_training_train_tokens_per_second", "gauge", "Completion tokens trained per "
                           "second of training (smoothed)"),
    "seconds_per_step": ("swarmnode_training_seconds_per_step", "gauge", "Wall seconds between two training "
                         "steps (smoothed)"),
    "slowdown": ("swarmnode_training_slowdown", "gauge", "training.slowdown: the node runs this many times slower "
                 "than it could"),
    "dropped_stale": ("swarmnode_training_dropped_stale", "counter", "Rollout groups dropped for exceeding the "
                      "staleness bound"),
    "groups_generated": ("swarmnode_training_groups_generated", "counter", "Rollout groups this node generated"),
    "external_trained": ("swarmnode_training_external_groups_trained", "counter", "Peers' rollout groups trained on"),
    "external_pool": ("swarmnode_training_external_pool_groups", "gauge", "Peers' rollout groups waiting in the "
                      "buffer"),
    "external_waits": ("swarmnode_training_external_waits", "counter", "Steps that waited for peers' groups"),
    "external_waits_skipped": ("swarmnode_training_external_waits_skipped", "counter", "Steps that would have "
                               "waited, but no peer's group had arrived lately"),
    "generator_idle_share": ("swarmnode_training_generator_idle_ratio", "gauge", "Share of wall time since "
                             "training began the generator waited at the staleness bound"),
    "trainer_idle_share": ("swarmnode_training_trainer_idle_ratio", "gauge", "Share of wall time since training "
                           "began the trainer waited for groups"),
}

GPU_MEMORY: dict[str, Row] = {
    "in_use_bytes": ("swarmnode_gpu_memory_in_use_bytes", "gauge", "GPU memory in use (every process on the GPU)"),
    "peak_bytes": ("swarmnode_gpu_memory_peak_bytes", "gauge", "The most GPU memory in use any status read saw"),
    "total_bytes": ("swarmnode_gpu_memory_total_bytes", "gauge", "GPU memory in all"),
}


def _rollout_counter(key: str, name: str, help_text: str) -> tuple[str, Row]:
    return key, (f"swarmnode_rollouts_{name}", "counter", help_text)


ROLLOUTS: dict[str, Row] = dict([
    _rollout_counter("batches_published", "batches_published", "This node's rollout batches sealed and offered"),
    _rollout_counter("groups_published", "groups_published", "This node's rollout groups offered to peers"),
    _rollout_counter("bytes_published", "published_bytes", "Bytes of this node's sealed rollout batches"),
    _rollout_counter("announcements", "announcements", "Rollout announcements stored in the DHT"),
    _rollout_counter("batches_fetched", "batches_fetched", "Rollout batches fetched from peers"),
    _rollout_counter("bytes_fetched", "fetched_bytes", "Bytes of rollout batches fetched from peers"),
    _rollout_counter("groups_accepted", "groups_accepted", "Peers' rollout groups that passed this node's checks"),
    _rollout_counter("groups_rejected", "groups_rejected", "Peers' rollout groups that failed a check (by "
                     "reason: swarmnode_rollouts_groups_rejected_by_reason_total)"),
    _rollout_counter("groups_skipped_other_task", "groups_skipped_other_task", "Peers' rollout groups of a task "
                     "this node does not train"),
    _rollout_counter("fetch_requests", "fetch_requests", "This node's fetch requests (long-polls) to peers"),
    _rollout_counter("empty_fetches", "empty_fetches", "Fetch requests answered with nothing new"),
    _rollout_counter("fetch_failures", "fetch_failures", "Fetch requests that failed (peer gone, timeout)"),
    _rollout_counter("fetches_deferred", "fetches_deferred", "Fetch rounds skipped: the pool held enough groups"),
    _rollout_counter("requests_served", "requests_served", "Peers' fetch requests this node answered"),
    _rollout_counter("requests_held", "requests_held", "Peers' fetch requests held as long-polls"),
    _rollout_counter("peers_ignored", "peers_ignored", "Times a peer went over the strike limit and was ignored"),
    _rollout_counter("store_errors", "store_errors", "SQLite writes of received groups that failed"),
    ("swarm_cpu_s", ("swarmnode_swarm_cpu_seconds", "counter", "CPU seconds of swarm I/O: event loop, gossip "
                     "workers, transport")),
    ("bytes_per_batch", ("swarmnode_rollouts_bytes_per_batch", "gauge", "Mean size of this node's sealed "
                         "rollout batches, bytes")),
    ("latency_p50_s", ("swarmnode_rollouts_latency_p50_seconds", "gauge", "Median publish-to-accepted latency "
                       "of peers' last 2048 batches, seconds")),
    ("latency_p99_s", ("swarmnode_rollouts_latency_p99_seconds", "gauge", "99th percentile of the same, seconds")),
    ("gossip_time_share", ("swarmnode_rollouts_gossip_cpu_ratio", "gauge", "CPU seconds of swarm I/O per second "
                           "of uptime")),
    ("gossip_busy_share", ("swarmnode_rollouts_gossip_busy_ratio", "gauge", "Wall time inside gossip work per "
                           "second of uptime")),
])

STORAGE: dict[str, Row] = {
    "rollouts_bytes": ("swarmnode_storage_rollouts_bytes", "gauge", "Bytes on disk of rollouts.sqlite (with its WAL)"),
    "metrics_bytes": ("swarmnode_storage_metrics_bytes", "gauge", "Bytes on disk of metrics.sqlite (with its WAL)"),
    "checkpoint_failures": ("swarmnode_storage_checkpoint_failures", "gauge", "Checkpoint writes that failed in a "
                            "row (0 after one succeeds)"),
}

LIMITS: dict[str, Row] = {
    "tracked_senders": ("swarmnode_limits_tracked_senders", "gauge", "Sender ledgers held"),
    **{key: (f"swarmnode_limits_{key}", "counter", help_text) for key, help_text in (
        ("peers_evicted", "Peers dropped from a full peer table"),
        ("senders_evicted", "Sender ledgers dropped from a full map"),
        ("rejection_senders_evicted", "Per-sender rejection counters dropped from a full map"),
        ("values_over_key_cap", "DHT values refused: their key held limits.max_values_per_key peers"),
        ("serve_refused", "Fetch requests answered empty: the peer was over limits.serve_requests_per_s"),
        ("accept_deferred", "Times a peer's batches were left for the next fetch (limits.accept_batches_per_s)"),
        ("fetch_waits", "Fetches that waited for a limits.max_concurrent_fetches slot"),
        ("held_refused", "Long-polls answered at once: rollouts.max_held_requests already held"))},
}
