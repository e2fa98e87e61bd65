"""What the training service reports: the trainer thread writes it, status readers take copies.

`TrainingStatus` holds the lock-protected state behind status.training (phase, counters, recent
rewards, held-out accuracy, the histogram of step times) and the outer-loop counters behind
status.summaries; the trainer thread updates it through one method per event, and `snapshot()`
/ `outer_snapshot()` copy it for the event loop.

`steps` and `outer_steps` continue the checkpoint's counts across restarts; `steps_this_run` and
`outer_steps_this_run` count what this process did (from 0 at each start), so that a Prometheus
counter built on them never decreases when the daemon restarts.
"""
from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any

from swarmnode.node.capability import gpu_memory_in_use, process_peak_reserved
from swarmnode.scheduler import Plan, SpeedMeter, trusted_supply
from swarmnode.status.snapshot import speed_figures
from swarmnode.summaries import OuterResult
from swarmnode.trainer.buffer import ExperienceBuffer
from swarmnode.trainer.trainer import StepResult
from swarmnode.utils.histogram import BucketCounts

RECENT_STEPS = 20  # reward_mean over the last this many steps
# Upper bounds (seconds) of the step-time histogram: a tiny model on a CPU takes a fraction of a
# second, a large one (or training.slowdown) minutes.
STEP_SECONDS_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0)


PEER_SUPPLY_ROWS = 32  # peers in training.peer_supply: those that supply the most


def plan_to_dict(plan: Plan) -> dict[str, Any]:
    """The plan as status shows it (training.plan)."""
    return {"local_rollouts": plan.local_rollouts, "external_rollouts": plan.external_rollouts,
            "external_wait_s": plan.external_wait_s, "steps_per_window": plan.steps_per_window, "reason": plan.reason}


def peer_supply_rows(supplies, trained_by_sender: dict[str, int], staleness_by_sender: dict[str, float],
                     limit: int = PEER_SUPPLY_ROWS) -> list[dict[str, Any]]:
    """training.peer_supply: per peer, the groups/s its record claims, those seen arriving, what
    the plan counts on (the lower: scheduler.plan.trusted_supply), its groups trained here and
    how stale they were on average (versions behind at training); the `limit` peers the plan
    counts on most, then by groups trained."""
    rows = [{"peer_id": s.peer_id, "claimed_groups_per_s": s.claimed_per_s, "observed_groups_per_s": s.observed_per_s,
             "planned_groups_per_s": trusted_supply(s.claimed_per_s, s.observed_per_s),
             "trained": trained_by_sender.get(s.peer_id, 0),
             "mean_staleness": None if s.peer_id not in staleness_by_sender else round(staleness_by_sender[s.peer_id], 2)}
            for s in supplies]
    rows.sort(key=lambda r: (-r["planned_groups_per_s"], -r["trained"], r["peer_id"]))
    return rows[:limit]


def staleness_histograms(stats) -> dict[str, dict[str, int]]:
    """Groups trained per staleness tau (trained version - behaviour version, on this node's
    clock): all, this node's own, and peers' (tau counted from this node's version at receipt)."""
    def histogram(counter) -> dict[str, int]:
        return {str(k): v for k, v in sorted(counter.items())}
    return {"staleness_histogram": histogram(stats.staleness), "staleness_local": histogram(stats.staleness_local),
            "staleness_external": histogram(stats.staleness_external)}


def buffer_figures(buffer: ExperienceBuffer) -> dict[str, Any]:
    """What status shows of the experience buffer: peers' groups trained (in all, per task, per
    sender), own success per task, the pool of peers' groups, staleness and drops."""
    stats = buffer.stats
    return {
        "external_trained": stats.external_taken,
        "external_trained_by_task": dict(stats.external_taken_by_task),
        "own_success": {task: round(s, 4) for task, s in sorted(buffer.own_success_snapshot().items())},
        "external_pool": buffer.external_available(),
        **staleness_histograms(stats),
        "dropped_stale": stats.dropped_stale,
        "external_waits": stats.external_waits,
        "external_waits_skipped": stats.external_waits_skipped,
        "external_trained_by_sender": dict(stats.external_taken_by_sender),
        "staleness_by_sender": stats.mean_staleness_by_sender(),
    }


class TrainingStatus:
    """The training service's state as status shows it (any thread reads, the trainer thread writes).

    `version` is the trainer's current policy version: one int, written by the trainer thread
    and read without the lock (peers' batches are checked against it)."""

    def __init__(self, model: str, slowdown: float, speed: SpeedMeter, device: str = "cpu"):
        self.model = model
        self.device = device
        self._gpu_peak = 0  # the most GPU memory in use any status read saw
        self.slowdown = slowdown
        self.speed = speed
        self.version = 0
        self.error: str | None = None
        self._lock = threading.Lock()
        self._state: dict[str, Any] = {"running": False, "phase": "loading model"}
        self._rewards: deque[float] = deque(maxlen=RECENT_STEPS)
        self._local_rewards: deque[float] = deque(maxlen=RECENT_STEPS)
        self._outer = {"outer_steps": 0, "outer_steps_this_run": 0, "merged": 0, "partners_last": 0, "merge_seconds": 0.0,
                       "merge_cpu_seconds": 0.0, "last_merge_at": None}
        self._step_seconds = BucketCounts(STEP_SECONDS_BUCKETS)  # has a lock of its own
        self._steps_at_start = 0  # the checkpoint's step count when training began in this process

    # -- written by the trainer thread -----------------------------------------------------------

    def set_version(self, version: int) -> None:
        """The trainer's policy version is now `version` (one int: readers need no lock)."""
        self.version = version

    def training(self, version: int, steps: int, outer_steps: int = 0) -> None:
        """The model is loaded and training begins at `version`, `steps` steps and `outer_steps`
        outer steps done (the checkpoint's counts; none yet in this process)."""
        with self._lock:
            self._steps_at_start = steps
            self._outer["outer_steps"] = outer_steps
            self._state.update(running=True, phase="training", policy_version=version, steps=steps, steps_this_run=0)

    def stepped(self, result: StepResult, steps: int, buffer: ExperienceBuffer, groups_generated: int) -> None:
        """A step is done: its rewards join the recent means, the counters are refreshed."""
        if result.local_reward_mean is not None:
            self._local_rewards.append(result.local_reward_mean)
        self._rewards.append(result.reward_mean)
        with self._lock:
            flat = self._state.get("steps_without_spread", 0) + (not result.trained)
            flat_in_a_row = 0 if result.trained else self._state.get("steps_without_spread_in_a_row", 0) + 1
            self._state.update(
                steps_without_spread=flat, steps_without_spread_in_a_row=flat_in_a_row,
                running=True, phase="training", policy_version=result.version, steps=steps,
                steps_this_run=steps - self._steps_at_start,
                reward_mean=round(sum(self._rewards) / len(self._rewards), 4),
                local_reward_mean=round(sum(self._local_rewards) / len(self._local_rewards), 4)
                if self._local_rewards else None,
                **buffer_figures(buffer),
                groups_generated=groups_generated,
            )

    def step_took(self, seconds: float) -> None:
        """A step that trained took `seconds`, its slowdown pause included (training.step_seconds_histogram)."""
        self._step_seconds.observe(seconds)

    def evaluated(self, accuracy_mean: float) -> None:
        with self._lock:
            self._state["heldout_accuracy"] = round(accuracy_mean, 4)

    def outer_stepped(self, outer_steps: int, result: OuterResult) -> None:
        """An outer step is done (`outer_steps` in all): its merge time and partners."""
        with self._lock:
            c = self._outer
            c["outer_steps"] = outer_steps
            c["outer_steps_this_run"] += 1
            c["merge_seconds"] += result.seconds
            c["merge_cpu_seconds"] += result.cpu_seconds
            c["partners_last"] = len(result.partners)
            if result.partners:
                c["merged"] += len(result.partners)
                c["last_merge_at"] = time.monotonic()

    def ended(self, done: bool) -> None:
        """Training returned: "done" (max_steps reached) or "stopped" (asked to stop)."""
        with self._lock:
            self._state.update(running=False, phase="done" if done else "stopped")

    def failed(self, error: str) -> None:
        """Training stopped on an error (shown as the phase and as `error`)."""
        self.error = error
        with self._lock:
            self._state.update(running=False, phase=f"failed: {error}")

    # -- read by anyone --------------------------------------------------------------------------

    def outer_snapshot(self) -> dict[str, Any]:
        with self._lock:
            return dict(self._outer)

    def gpu_memory(self) -> dict[str, Any] | None:
        """status.training.gpu_memory on a CUDA device (None elsewhere): in use now (every process
        on the GPU), the peak (the most any status read saw, at least this process's own
        allocator peak) and the total."""
        memory = gpu_memory_in_use(self.device)
        if memory is None:
            return None
        in_use, total = memory
        own_peak = process_peak_reserved(self.device)
        with self._lock:  # status reads come from more than one thread
            self._gpu_peak = peak = max(self._gpu_peak, in_use, own_peak)
        return {"device": self.device, "in_use_bytes": in_use, "peak_bytes": peak, "total_bytes": total}

    def snapshot(self, plan: Plan, runner) -> dict[str, Any]:
        """status.training: the state, this node's speeds, the plan and (once a runner exists,
        else None) how much of the time each thread waited."""
        with self._lock:
            state = dict(self._state)
        return {
            "running": state.get("running", False),
            "phase": state.get("phase"),
            "model": self.model,
            "policy_version": state.get("policy_version"),
            "steps": state.get("steps"),
            "steps_this_run": state.get("steps_this_run"),
            "steps_without_spread": state.get("steps_without_spread"),
            "steps_without_spread_in_a_row": state.get("steps_without_spread_in_a_row"),
            "reward_mean": state.get("reward_mean"),
            "local_reward_mean": state.get("local_reward_mean"),
            "external_trained": state.get("external_trained"),
            "external_trained_by_task": state.get("external_trained_by_task"),
            "own_success": state.get("own_success"),
            "external_pool": state.get("external_pool"),
            "heldout_accuracy": state.get("heldout_accuracy"),
            **speed_figures(self.speed.snapshot()),
            "slowdown": self.slowdown,
            "staleness_histogram": state.get("staleness_histogram"),
            "staleness_local": state.get("staleness_local"),
            "staleness_external": state.get("staleness_external"),
            "step_seconds_histogram": self._step_seconds.snapshot(),
            "dropped_stale": state.get("dropped_stale"),
            "external_waits": state.get("external_waits"),
            "external_waits_skipped": state.get("external_waits_skipped"),
            "groups_generated": state.get("groups_generated"),
            "external_trained_by_sender": state.get("external_trained_by_sender"),
            "plan": plan_to_dict(plan),
            "peer_supply": peer_supply_rows(plan.supplies, state.get("external_trained_by_sender") or {},
                                            state.get("staleness_by_sender") or {}),
            **(runner.idle_shares() if runner is not None else {"generator_idle_share": None, "trainer_idle_share": None}),
            "gpu_memory": self.gpu_memory(),
            "error": self.error,
        }
