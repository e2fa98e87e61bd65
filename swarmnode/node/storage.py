"""The home's durable state as the daemon sees it: one retention pass over both SQLite stores,
and the `storage` object of the status document (docs/status.md)."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # types only: the checkpointer imports torch, which a node without a model never loads
    from swarmnode.config.model import StorageConfig
    from swarmnode.store.checkpoints import BackgroundCheckpointer
    from swarmnode.store.metrics import MetricsStore
    from swarmnode.store.rollout_store import RolloutStore


def maintain_stores(rollouts: RolloutStore, metrics: MetricsStore, config: StorageConfig, now: float) -> dict[str, Any]:
    """Retention and WAL checkpoints of rollouts.sqlite and metrics.sqlite. Blocking (worker thread).

    Returns {"at": now, "seconds": how long the pass took, "rollouts": ..., "metrics": ...} with
    what each store's maintain() did.
    """
    started = time.monotonic()
    done = {"rollouts": rollouts.maintain(config, now), "metrics": metrics.maintain(config, now)}
    return {"at": now, "seconds": round(time.monotonic() - started, 3), **done}


def storage_status(rollouts: RolloutStore | None, metrics: MetricsStore | None,
                   checkpoints: BackgroundCheckpointer | None, last_maintenance: dict[str, Any] | None) -> dict[str, Any]:
    """The status document's `storage` object; zeros and nulls for what a node does not have."""
    last = checkpoints.last_path if checkpoints is not None else None
    return {
        "rollouts_bytes": rollouts.size_bytes() if rollouts is not None else 0,
        "metrics_bytes": metrics.size_bytes() if metrics is not None else 0,
        "checkpoint_failures": checkpoints.consecutive_failures if checkpoints is not None else 0,
        "last_checkpoint_error": checkpoints.last_error if checkpoints is not None else None,
        "last_checkpoint": last.name if last is not None else None,
        "last_maintenance": last_maintenance,
    }
