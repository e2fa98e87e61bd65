"""The node's local RL as one service: the trainer thread, and what the node's other loops use.

`TrainingService` owns the trainer thread (start, stop, errors; a fatal one goes to
`TrainingListeners.on_fatal`) and the surface the event loop and gossip use: peers' batches in
(`receive`, `ready`, `external_wanted`), groups and summaries out (`outgoing`, `summaries_out`),
the scheduler's plan (`apply_plan`), the speed and delivery meters, and `snapshot()`.
Its parts, each in its own module:

- node/training/setup.py: builds the policy, trainer, outer loop, runner and intake from the config;
- node/training/step_recorder.py: records each step (metrics, evaluation, checkpoints, outer steps);
- node/training/status.py: the lock-protected state behind `snapshot()` / `outer_snapshot()`.

Everything heavy runs on the trainer thread (and the runner's generator thread or process): the
daemon's event loop only calls `start`, `stop` and `snapshot`.
"""
from __future__ import annotations

import logging
import queue
import threading
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from swarmnode.config import NodeConfig
from swarmnode.node.logs import FILE_ONLY
from swarmnode.node.training.step_recorder import (
    CheckpointFailures,
    HeldoutEvaluation,
    OuterSteps,
    OutgoingSummary,
    StepRecorder,
    offer_newest,
)
from swarmnode.node.training.setup import (
    PolicyIdentity,
    build_intake,
    build_outer_loop,
    build_runner,
    generator_options,
    load_node_policy,
    make_evaluator,
    node_base_fingerprint,
    policy_identity,
    resume_trainer,
    rollout_config,
    trainer_config,
)
from swarmnode.node.training.status import TrainingStatus
from swarmnode.protocol.generated import rollout_batch_pb2
from swarmnode.scheduler import DeliveryMeter, Plan, SpeedMeter
from swarmnode.store.checkpoints import BackgroundCheckpointer, TrainingState
from swarmnode.store.metrics import MetricsStore
from swarmnode.summaries import OuterLoop, OuterResult
from swarmnode.swarm.gossip.rollout_bookkeeping import fetch_wanted
from swarmnode.trainer.buffer import ExperienceBuffer
from swarmnode.trainer.evaluate import greedy_accuracy, heldout_items, questions_of
from swarmnode.trainer.experience import ScoredGroup
from swarmnode.trainer.intake import IntakeResult, RolloutIntake
from swarmnode.trainer.loop import AsyncRunner, Quotas, RolloutConfig, make_buffer
from swarmnode.trainer.process_loop import ProcessAsyncRunner
from swarmnode.trainer.trainer import Trainer

__all__ = ["CheckpointFailures", "OutgoingSummary", "TrainingListeners", "TrainingService", "failure_reason",
           "fetch_ahead_steps", "generator_options", "trainer_config"]

log = logging.getLogger("swarmnode.training")
OUTGOING_CAPACITY = 256  # generated batches waiting to be shared; the oldest go when full


def _ignore(_) -> None:
    pass


@dataclass(frozen=True)
class TrainingListeners:
    """Who hears about what happens on the trainer thread (each is called there)."""

    # {sender: samples} the trainer dropped as implausible (rollout gossip blames the senders).
    on_implausible: Callable[[dict[str, int]], None] = _ignore
    # Each outer step that judged peers' summaries (summary gossip takes its verdicts).
    on_outer_step: Callable[[OuterResult], None] = _ignore
    # A one-line reason training ended on an error (any exception on the trainer thread, e.g.
    # storage.max_checkpoint_failures writes in a row failed); None: the reason is logged and
    # the node serves on without training.
    on_fatal: Callable[[str], None] | None = None


def failure_reason(error: BaseException) -> str:
    """One line for an error that ended training: a checkpoint failure's own words, else the
    error's type and the first line of its message."""
    if isinstance(error, CheckpointFailures):
        return str(error)
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {text[:300]}" if text else type(error).__name__


def fetch_ahead_steps(config: NodeConfig) -> float:
    """rollouts.fetch_ahead_steps, or 0 (fetch everything) while the scheduler is on: it
    measures peers' supply from what arrives, which a paused fetch would hide."""
    return 0.0 if config.scheduler.enabled else config.rollouts.fetch_ahead_steps


def plan_quotas(plan: Plan) -> Quotas:
    return Quotas(plan.local_rollouts, plan.external_rollouts, plan.external_wait_s)


class TrainingService:
    """The node's training: see the module docstring. The parts the trainer thread builds
    (`outer`, `intake`, the runner and buffer, the fingerprints) are None or empty until it has
    built them, and each is set once."""

    def __init__(self, config: NodeConfig, home_root: Path, quality: Callable[[], Mapping[str, float]] = dict,
                 listeners: TrainingListeners = TrainingListeners(),
                 saved_trust: Sequence[tuple[str, float, int]] = ()):
        self.config = config
        self.home_root = home_root
        self.quality = quality  # sender id -> quality, for the fresh_quality selection policy
        self.listeners = listeners
        self.checkpoints = BackgroundCheckpointer(home_root / "checkpoints")
        self.metrics = MetricsStore(home_root / "metrics.sqlite")
        # Smoothed speeds of this node's real work (generator and trainer threads feed it; the
        # daemon publishes them in its PeerRecord and status).
        self.speed = SpeedMeter()
        # Groups accepted from each verified peer, as groups/s (the scheduler's observed supply).
        self.deliveries = DeliveryMeter(max_peers=config.limits.max_tracked_senders)
        # The scheduler's current plan (node/scheduling.py sets it once per window).
        t = config.training
        self.plan = Plan(t.local_rollouts, t.external_rollouts, t.external_wait_s, None, "not planned yet")
        self.status = TrainingStatus(config.model.name_or_path, t.slowdown, self.speed, config.model.device)
        # Groups generated here, waiting for the node's event loop to share them.
        self.outgoing: queue.Queue[list[ScoredGroup]] = queue.Queue(maxsize=OUTGOING_CAPACITY)
        # Summaries made here, for the event loop to publish.
        self.summaries_out: queue.Queue[OutgoingSummary] = queue.Queue(maxsize=4)
        # How many peers in the table share this node's base weights (the daemon's poll loop
        # sets it; summaries go out only while someone can merge them).
        self.same_base_peers = 0
        # Peers' summary trust saved by an earlier run: (peer, score, judged), restored into the
        # outer loop when it is built.
        self.saved_trust = list(saved_trust)
        # Built by the trainer thread.
        self.model_identity: PolicyIdentity | None = None
        self.base_fingerprint = ""
        self.outer: OuterLoop | None = None
        self.intake: RolloutIntake | None = None
        self._buffer: ExperienceBuffer | None = None
        self._runner: AsyncRunner | ProcessAsyncRunner | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    @property
    def fingerprint(self) -> str:
        return self.model_identity.fingerprint if self.model_identity is not None else ""

    @property
    def tokenizer_fingerprint(self) -> str:
        return self.model_identity.tokenizer_fingerprint if self.model_identity is not None else ""

    @property
    def eos_ids(self) -> set[int]:
        return self.model_identity.eos_ids if self.model_identity is not None else set()

    @property
    def error(self) -> str | None:
        """Why training stopped, if it failed."""
        return self.status.error

    # -- swarm sharing (called from the node's worker threads) ---------------------------------

    @property
    def ready(self) -> bool:
        """The policy is loaded and the buffer exists: peers' rollouts can be taken."""
        return self.intake is not None and self._buffer is not None

    def _share(self, groups: list[ScoredGroup]) -> None:
        if self.config.rollouts.share:
            offer_newest(self.outgoing, groups)  # peers want fresh rollouts: the oldest go when full

    def receive(self, batch: rollout_batch_pb2.RolloutBatch, sender: str) -> IntakeResult:
        """Check and re-score a peer's batch; accepted groups go to the experience buffer."""
        assert self.intake is not None and self._buffer is not None
        result = self.intake.accept(batch, sender, self.status.version)
        if result.groups:
            self._buffer.put(result.groups)
            self.deliveries.delivered(sender, len(result.groups))
        return result

    def external_wanted(self) -> bool:
        """Whether gossip should fetch peers' batches now (swarm/gossip/rollout_bookkeeping.fetch_wanted)."""
        buffer, ahead = self._buffer, fetch_ahead_steps(self.config)
        if buffer is None or ahead <= 0:
            return True  # no pool yet, or fetch everything: no need to count the pool (event loop)
        return fetch_wanted(buffer.external_usable(self.status.version), self.plan.external_rollouts, ahead)

    def apply_plan(self, plan: Plan) -> None:
        """The runner takes `plan`'s quotas from its next batch and step (any thread)."""
        self.plan = plan
        runner = self._runner
        if runner is not None:
            runner.quotas = plan_quotas(plan)

    # -- lifecycle (called from the event loop) ------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._main, name="swarmnode-trainer", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Blocking: stop training after the current step and wait for the last checkpoint."""
        self._stopping.set()
        runner = self._runner
        if runner is not None:
            runner.stop()
        if self._thread is not None:
            self._thread.join()
        self.checkpoints.wait()
        self.metrics.close()

    # -- the trainer thread --------------------------------------------------------------------

    def _main(self) -> None:
        try:
            self._train()
        except Exception as e:  # noqa: BLE001 - any error ends training: the daemon decides what follows
            reason = failure_reason(e)
            log.error("training failed", exc_info=True, extra=FILE_ONLY)  # the traceback, in the log file only
            self.status.failed(reason)
            if self._stopping.is_set():  # the node is stopping anyway: a clean stop stays a clean stop
                log.warning("training ended with an error while stopping: %s", reason)
                return
            if self.listeners.on_fatal is not None:
                self.listeners.on_fatal(reason)  # the daemon logs it and stops, or serves on (training.keep_serving)
            else:
                log.error("training stopped: %s", reason)

    def _train(self) -> None:
        """Build the training, making each part visible to the node as soon as it is ready, then
        train until training.max_steps or a stop."""
        config = self.config
        policy = load_node_policy(config)
        self.model_identity = policy_identity(policy)
        # Hashed before any checkpoint is loaded: the weights every node of this base started from.
        self.base_fingerprint = node_base_fingerprint(config, self.home_root, policy)
        trainer, state, resumed = resume_trainer(config, policy, self.checkpoints.root)
        self.outer = build_outer_loop(config, trainer, resumed, state, self.saved_trust)
        rollout = rollout_config(config)
        items = heldout_items(rollout.tasks, config.training.eval_size)
        start_index = state.stream_position // len(rollout.tasks)
        self.status.version = trainer.version
        buffer = make_buffer(rollout, quality=self.quality, seed=rollout.data_seed)
        recorder = self._make_recorder(trainer, policy, buffer, items, rollout, state, start_index)
        runner = build_runner(config, policy, trainer, rollout, buffer, stream_start=start_index,
                              exclude=questions_of(items), on_generated=self._share,
                              after_step=recorder.after_step, on_generate_timing=self.speed.generated)
        self._runner = runner  # first: a plan applied from now on reaches the runner
        runner.quotas = plan_quotas(self.plan)  # the newest plan (made before the model loaded, or just now)
        self.intake = build_intake(config, policy, self.base_fingerprint, rollout)
        self._buffer = buffer
        self._run(runner, recorder)

    def _make_recorder(self, trainer: Trainer, policy, buffer: ExperienceBuffer, items: list, rollout: RolloutConfig,
                       state: TrainingState, start_index: int) -> StepRecorder:
        """The recorder of this run's steps, its evaluation and (with summaries on) its outer steps."""
        t = self.config.training
        evaluator = make_evaluator(self.config, trainer, policy)
        evaluation = HeldoutEvaluation(partial(greedy_accuracy, evaluator, items, rollout.sampling.max_new_tokens),
                                       every_versions=t.eval_every, every_seconds=t.eval_every_s,
                                       metrics=self.metrics, status=self.status)
        outer_steps = None
        if self.outer is not None:
            outer_steps = OuterSteps(self.outer, summaries_out=self.summaries_out, status=self.status,
                                     same_base_peers=lambda: self.same_base_peers,  # the daemon's latest count
                                     on_outer_step=self.listeners.on_outer_step,
                                     samples_per_prompt=rollout.samples_per_prompt)
        return StepRecorder(trainer=trainer, buffer=buffer, evaluation=evaluation, outer_steps=outer_steps,
                            checkpoints=self.checkpoints, checkpoint_every=t.checkpoint_every,
                            max_checkpoint_failures=self.config.storage.max_checkpoint_failures,
                            metrics=self.metrics, status=self.status, speed=self.speed,
                            on_implausible=self.listeners.on_implausible,
                            samples_per_prompt=rollout.samples_per_prompt, steps=state.steps,
                            stream_offset=start_index * len(rollout.tasks))

    def _run(self, runner: AsyncRunner | ProcessAsyncRunner, recorder: StepRecorder) -> None:
        """Evaluate, train the steps left to training.max_steps (all, without it) unless a stop
        came first, and after all of them a last evaluation and checkpoint."""
        max_steps = self.config.training.max_steps
        recorder.start()
        remaining = None if max_steps is None else max(0, max_steps - recorder.steps)
        if not self._stopping.is_set() and remaining != 0:
            runner.run(remaining, lambda result, dropped: recorder.record(result, dropped, runner.items_generated))
        if remaining is not None and not self._stopping.is_set():
            recorder.finish(runner.items_generated)
        self.status.ended(done=remaining is not None and not self._stopping.is_set())

    # -- status --------------------------------------------------------------------------------

    def outer_snapshot(self) -> dict[str, Any]:
        return self.status.outer_snapshot()

    def snapshot(self) -> dict[str, Any]:
        return self.status.snapshot(self.plan, self._runner)
