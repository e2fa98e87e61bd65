"""The scheduler's loop on the node's event loop: once per swarm window, a new plan.

It gathers the plan's inputs (this node's measured seconds per group, each peer's claimed speed
from its record and the groups this node has seen arrive from it) and hands the plan to the
training service, which gives the runner its quotas. The math is in swarmnode/scheduler/plan.py.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Callable, Iterable

from swarmnode.config import NodeConfig
from swarmnode.node.training.service import TrainingService
from swarmnode.scheduler import PeerSupply, Plan, PlanLimits, claimed_groups_per_s, fixed_plan, make_plan
from swarmnode.swarm.peers import PeerEntry
from swarmnode.swarm.windows import window_index

log = logging.getLogger("swarmnode.scheduler")


def plan_limits(config: NodeConfig) -> PlanLimits:
    t, s = config.training, config.scheduler
    return PlanLimits(
        window_s=config.swarm.window_s, local_rollouts=t.local_rollouts, external_rollouts=t.external_rollouts,
        min_local=s.min_local_rollouts, max_local=max(s.min_local_rollouts, s.max_local_rollouts),
        min_steps_per_window=s.min_steps_per_window, max_steps_per_window=s.max_steps_per_window,
        publish_share=s.publish_share, max_wait_share=s.max_wait_share, fixed_wait_s=t.external_wait_s,
    )


def peer_supplies(entries: Iterable[PeerEntry], observed: dict[str, float], tokens_per_group: float | None) -> list[PeerSupply]:
    """One PeerSupply per peer in the table or seen delivering: the record's claim (tokens/s over
    this node's tokens per group) and the observed groups/s. A sender with no record in the table
    still counts by what it delivered (its claim is unknown, not trusted)."""
    claims = {e.peer_id: claimed_groups_per_s(e.record.capability.generate_tokens_per_s, tokens_per_group)
              for e in entries}
    return [PeerSupply(peer, claims.get(peer), observed.get(peer)) for peer in sorted(set(claims) | set(observed))]


def current_plan(config: NodeConfig, training: TrainingService, entries: Iterable[PeerEntry]) -> Plan:
    """This window's plan (the fixed quotas while the scheduler is off)."""
    limits = plan_limits(config)
    supplies = peer_supplies(entries, training.deliveries.rates(), training.speed.tokens_per_group())
    if not config.scheduler.enabled:
        return fixed_plan(limits, "scheduler off: fixed quotas", tuple(supplies))
    return make_plan(training.speed.own_speed(), supplies, limits, saturated=training.deliveries.saturated)


async def plan_loop(config: NodeConfig, training: TrainingService, entries: Callable[[], list[PeerEntry]],
                    dht_time: Callable[[], float]) -> None:
    """Re-plan at each window boundary (checked every records.poll_interval_s); owned by the
    daemon's task group, cancelled with it."""
    planned_window = None
    while True:
        window = window_index(dht_time(), config.swarm.window_s)
        if window != planned_window:
            plan = current_plan(config, training, entries())
            training.inputs.apply_plan(plan)
            planned_window = window
            log.debug("window %d plan: %s", window, plan)
        await asyncio.sleep(min(config.records.poll_interval_s, config.swarm.window_s / 4))
