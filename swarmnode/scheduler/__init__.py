"""The scheduler's math: this node's measured speed (more to come: per-window plans, staleness weights)."""
from swarmnode.scheduler.speed import EMA_ALPHA, SpeedMeter, Throughput, ema, observe

__all__ = ["EMA_ALPHA", "SpeedMeter", "Throughput", "ema", "observe"]
