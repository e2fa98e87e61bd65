"""Durable state: checkpoints (safetensors + JSON) and the metrics history (SQLite)."""
