"""Durable state in the node home: checkpoints (safetensors + JSON) and SQLite stores.

- checkpoints.py: save_checkpoint, load_checkpoint, latest_checkpoint (crash-safe), TrainingState,
  BackgroundCheckpointer (writes on a worker thread)
- checkpoint_model.py: CheckpointModel, the model a checkpoint belongs to (in its state.json), and
  the one line that refuses to resume it with another
- training_reset.py: moving a home's training (checkpoints, metrics) aside into a dated folder
- rollout_store.py: RolloutStore, peers' accepted groups and rejections (rollouts.sqlite)
- standing.py: StandingStore, peers' standing (strikes, ignores, cursors, trust) across restarts
- metrics.py: MetricsStore, the metrics history (metrics.sqlite)
- retention.py: age limits, size bounds, downsampling and WAL checkpoints for those stores
- sqlite.py: open_db, transaction (one connection per store, shared under a lock)
"""
