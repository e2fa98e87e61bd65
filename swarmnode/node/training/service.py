"""The node's local RL as one service: the trainer thread, and what the node's other loops use.

`TrainingService` owns the trainer thread (start, stop, errors; a fatal one goes to
`TrainingListeners.on_fatal`). What crosses between the event loop and the trainer thread goes
through node/training/boundary.py: `inputs` (`SwarmInputs`: same-base peers, the plan, peers'
batches) and `outputs` (`TrainerOutputs`: groups and summaries out, the listeners). It also
holds the speed meter and `snapshot()`. Its parts, each in its own module:

- node/training/setup.py: builds the policy, trainer, outer loop, runner and intake from the config;
- node/training/step_recorder.py: records each step (metrics, evaluation, checkpoints, outer steps);
- node/training/status.py: the lock-protected state behind `snapshot()` / `outer_snapshot()`.

Everything heavy runs on the trainer thread (and the runner's generator thread or process): the
daemon's event loop only calls `start`, `stop` and `snapshot`.
"""
from __future__ import annotations

import logging
import threading
from functools import partial
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from swarmnode.config import NodeConfig
from swarmnode.node.logs import FILE_ONLY
from swarmnode.node.training.boundary import (
    SwarmInputs,
    TrainerOutputs,
    TrainingListeners,
)
from swarmnode.node.training.step_recorder import (
    CheckpointFailures,
    HeldoutEvaluation,
    OuterSteps,
    OutgoingSummary,
    StepRecorder,
)
from swarmnode.node.training.setup import (
    CheckpointUnloadable,
    PolicyIdentity,
    SummariesTooLarge,
    build_intake,
    build_outer_loop,
    build_runner,
    checkpoint_model,
    generator_options,
    load_node_policy,
    make_evaluator,
    node_base_fingerprint,
    node_base_weights_key,
    policy_identity,
    resume_trainer,
    rollout_config,
    trainer_config,
)
from swarmnode.node.training.outer_access import OuterLoopAccess
from swarmnode.node.training.status import TrainingStatus
from swarmnode.scheduler import DeliveryMeter, Plan, SpeedMeter
from swarmnode.store.checkpoint_model import CheckpointOfAnotherModel
from swarmnode.store.checkpoints import BackgroundCheckpointer, TrainingState
from swarmnode.utils.priority import lower_thread_priority
from swarmnode.store.metrics import MetricsStore
from swarmnode.summaries import OuterLoop
from swarmnode.trainer.buffer import ExperienceBuffer
from swarmnode.trainer.evaluate import greedy_accuracy, heldout_items, questions_of
from swarmnode.trainer.intake import RolloutIntake
from swarmnode.trainer.loop import AsyncRunner, RolloutConfig, make_buffer
from swarmnode.trainer.process_loop import ProcessAsyncRunner
from swarmnode.trainer.trainer import Trainer
from swarmnode.utils.errors import first_line

__all__ = ["CheckpointFailures", "OutgoingSummary", "SwarmInputs", "TrainerOutputs", "TrainingListeners",
           "TrainingService", "failure_reason", "generator_options", "trainer_config"]

log = logging.getLogger("swarmnode.training")


def failure_reason(error: BaseException) -> str:
    """One line for an error that ended training: a checkpoint failure's (or refusal's) own
    words, else the error's type and the first line of its message."""
    if isinstance(error, (CheckpointFailures, CheckpointOfAnotherModel, CheckpointUnloadable, SummariesTooLarge)):
        return str(error)
    return f"{type(error).__name__}: {first_line(error)[:300]}" if str(error).strip() else type(error).__name__


class TrainingService:
    """The node's training: see the module docstring. The parts the trainer thread builds
    (`outer`, `intake`, the runner and buffer, the fingerprints) are None or empty until it has
    built them, and each is set once."""

    def __init__(self, config: NodeConfig, home_root: Path, quality: Callable[[], Mapping[str, float]] = dict,
                 listeners: TrainingListeners = TrainingListeners(),
                 saved_trust: Sequence[tuple[str, float, int]] = (), deliveries: DeliveryMeter | None = None):
        self.config = config
        self.home_root = home_root
        self.quality = quality  # sender id -> quality, for the fresh_quality selection policy
        self.checkpoints = BackgroundCheckpointer(home_root / "checkpoints")
        self.metrics = MetricsStore(home_root / "metrics.sqlite")
        # Smoothed speeds of this node's real work (generator and trainer threads feed it; the
        # daemon publishes them in its PeerRecord and status).
        self.speed = SpeedMeter()
        # Groups accepted from each verified peer, as groups/s (the scheduler's observed supply).
        self.deliveries = deliveries or DeliveryMeter(max_peers=config.limits.max_tracked_senders)
        t = config.training
        self.status = TrainingStatus(config.model.name_or_path, t.slowdown, self.speed, config.model.device)
        # Event loop -> trainer thread; the plan until node/scheduling.py makes one per window.
        self.inputs = SwarmInputs(config, self.deliveries, lambda: self.status.version,
                                  Plan(t.local_rollouts, t.external_rollouts, t.external_wait_s, None, "not planned yet"))
        self.outputs = TrainerOutputs(listeners, share=config.rollouts.share)  # trainer thread -> event loop
        # Peers' summary trust saved by an earlier run: (peer, score, judged), restored into the
        # outer loop when it is built.
        self.saved_trust = list(saved_trust)
        # Built by the trainer thread.
        self.outer: OuterLoop | None = None
        self.outer_access = OuterLoopAccess(lambda: self.outer)  # what summary gossip may use of it
        self.intake: RolloutIntake | None = None
        self._runner: AsyncRunner | ProcessAsyncRunner | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    # The loaded policy's fingerprints (TrainerOutputs), empty until the trainer thread loaded it.

    @property
    def model_identity(self) -> PolicyIdentity | None:
        return self.outputs.identity

    @property
    def base_fingerprint(self) -> str:
        return self.outputs.base_fingerprint

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
        problem = lower_thread_priority(self.config.training.nice)
        if problem is not None:
            log.info("training runs at the node's priority (%s)", problem)
        try:
            self._train()
        except Exception as e:  # noqa: BLE001 - any error ends training: the daemon decides what follows
            reason = failure_reason(e)
            log.error("training failed", exc_info=True, extra=FILE_ONLY)  # the traceback, in the log file only
            self.status.failed(reason)
            if self._stopping.is_set():  # the node is stopping anyway: a clean stop stays a clean stop
                log.warning("training ended with an error while stopping: %s", reason)
                return
            if self.outputs.listeners.on_fatal is not None:
                self.outputs.listeners.on_fatal(reason)  # the daemon logs it and stops, or serves on (training.keep_serving)
            else:
                log.error("training stopped: %s", reason)

    def _train(self) -> None:
        """Build the training, making each part visible to the node as soon as it is ready, then
        train until training.max_steps or a stop."""
        config = self.config
        policy = load_node_policy(config)
        self.outputs.policy_loaded(policy_identity(policy))
        # Hashed before any checkpoint is loaded: the weights every node of this base started from.
        base = node_base_fingerprint(config, self.home_root, policy)
        self.outputs.base_hashed(base)
        model = checkpoint_model(config, policy, base, node_base_weights_key(config))
        self.checkpoints.model_record = model.to_json()  # each checkpoint names its model
        trainer, state, resumed = resume_trainer(config, policy, self.checkpoints.root, model)
        self.outer = build_outer_loop(config, trainer, resumed, state, self.saved_trust)
        rollout = rollout_config(config)
        items = heldout_items(rollout.tasks, config.training.eval_size)
        start_index = state.stream_position // len(rollout.tasks)
        self.status.set_version(trainer.version)
        buffer = make_buffer(rollout, quality=self.quality, seed=rollout.data_seed)
        recorder = self._make_recorder(trainer, policy, buffer, items, rollout, state, start_index)
        runner = build_runner(config, policy, trainer, rollout, buffer, stream_start=start_index,
                              exclude=questions_of(items), on_generated=self.outputs.share,
                              after_step=recorder.after_step, on_generate_timing=self.speed.generated)
        self._runner = runner
        self.inputs.plan_to(runner.set_quotas)  # the newest plan (made before the model loaded, or just now), then each
        self.intake = build_intake(config, policy, self.base_fingerprint, rollout)
        self.inputs.open_intake(self.intake, buffer)
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
            outer_steps = OuterSteps(self.outer, summaries_out=self.outputs.summaries, status=self.status,
                                     same_base_peers=self.inputs.same_base_peers,  # the daemon's latest count
                                     on_outer_step=self.outputs.listeners.on_outer_step,
                                     samples_per_prompt=rollout.samples_per_prompt)
        return StepRecorder(trainer=trainer, buffer=buffer, evaluation=evaluation, outer_steps=outer_steps,
                            checkpoints=self.checkpoints, checkpoint_every=t.checkpoint_every,
                            max_checkpoint_failures=self.config.storage.max_checkpoint_failures,
                            metrics=self.metrics, status=self.status, speed=self.speed,
                            on_implausible=self.outputs.listeners.on_implausible,
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
        return self.status.snapshot(self.inputs.plan(), self._runner)
