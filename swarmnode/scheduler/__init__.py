"""The scheduler's math: this node's measured speed, its peers' deliveries, and the per-window
plan of how much it generates, trains and takes from peers (all pure but the meters' locks).

- speed.py: SpeedMeter (this node's smoothed generation and training speed), Throughput, ema,
  observe; DeliveryMeter and delivery_rates (groups each peer actually delivered per second)
- plan.py: make_plan -> Plan (local and external groups per step, waits) from OwnSpeed,
  PeerSupply and PlanLimits; fixed_plan; claimed_groups_per_s; trusted_supply
"""
from swarmnode.scheduler.plan import (
    OwnSpeed,
    PeerSupply,
    Plan,
    PlanLimits,
    claimed_groups_per_s,
    fixed_plan,
    make_plan,
    trusted_supply,
)
from swarmnode.scheduler.speed import EMA_ALPHA, DeliveryMeter, SpeedMeter, Throughput, delivery_rates, ema, observe

__all__ = ["EMA_ALPHA", "DeliveryMeter", "OwnSpeed", "PeerSupply", "Plan", "PlanLimits", "SpeedMeter", "Throughput",
           "claimed_groups_per_s", "delivery_rates", "ema", "fixed_plan", "make_plan", "observe",
           "trusted_supply"]
