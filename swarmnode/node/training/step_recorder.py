"""Recording each training step, on the trainer thread.

- `StepRecorder`: after each step, in this order: metrics, speed and status, the held-out
  evaluation when due, a checkpoint every training.checkpoint_every versions, and the check that
  checkpoint writes still succeed; before the weights go out, the outer step when due; at the
  end, a last evaluation and checkpoint.
- `HeldoutEvaluation`: the held-out accuracy and when it is due again.
- `OuterSteps`: every summaries.every_steps local steps, the outer step and the summary it makes,
  handed to the event loop as an `OutgoingSummary`.
- `check_checkpoint_failures`, `save_checkpoint`, `offer_newest`: the plain steps they share.
"""
from __future__ import annotations

import logging
import queue
import time
from dataclasses import dataclass
from typing import Callable

from swarmnode.node.training.status import TrainingStatus
from swarmnode.scheduler import SpeedMeter
from swarmnode.store.checkpoints import BackgroundCheckpointer, TrainingState
from swarmnode.store.metrics import MetricsStore
from swarmnode.summaries import OuterLoop, OuterResult
from swarmnode.trainer.buffer import ExperienceBuffer
from swarmnode.trainer.trainer import StepResult, Trainer

log = logging.getLogger("swarmnode.training")


class CheckpointFailures(RuntimeError):
    """Too many checkpoint writes failed in a row: training on without a save would lose the work."""


def check_checkpoint_failures(checkpoints: BackgroundCheckpointer, max_failures: int) -> None:
    """Raise CheckpointFailures once `max_failures` (storage.max_checkpoint_failures) writes in a row failed."""
    failures = checkpoints.consecutive_failures
    if failures >= max_failures:
        raise CheckpointFailures(
            f"checkpoint writes failed {failures} times in a row (last: {checkpoints.last_error}); "
            f"make {checkpoints.root} a writable folder with free space, then restart")


def save_checkpoint(checkpoints: BackgroundCheckpointer, trainer: Trainer, outer: OuterLoop | None,
                    state: TrainingState) -> None:
    """Queue a checkpoint of the trainer (and the outer loop's state, if any) for the background writer."""
    outer_state = None
    if outer is not None:
        outer_state = outer.state_tensors()
        state.extra["outer"] = outer.state_meta()
    checkpoints.save(trainer.model, trainer.optimizer, state, outer_state)


def offer_newest(q: queue.Queue, item) -> None:
    """Put `item`, dropping the oldest items while `q` is full: its reader wants the newest."""
    while True:
        try:
            q.put_nowait(item)
            return
        except queue.Full:
            try:
                q.get_nowait()
            except queue.Empty:
                pass


def evaluation_due(version: int, seconds_since_last: float, every_versions: int, every_seconds: float) -> bool:
    """Evaluate after this step: at every `every_versions`-th version, or once `every_seconds`
    (> 0) have passed since the last evaluation."""
    return version % every_versions == 0 or 0 < every_seconds <= seconds_since_last


@dataclass(frozen=True)
class OutgoingSummary:
    """A summary made on the trainer thread, for the event loop to seal and publish."""

    tensors: list
    step_start: int
    step_end: int
    base_version: int
    num_samples: int


class HeldoutEvaluation:
    """The held-out accuracy (`measure()`: {"mean": ..., task: ...}), recorded as metrics and
    status, and when it is due: every `every_versions` versions or `every_seconds` (> 0) after
    the last one ended."""

    def __init__(self, measure: Callable[[], dict[str, float]], *, every_versions: int, every_seconds: float,
                 metrics: MetricsStore, status: TrainingStatus, clock: Callable[[], float] = time.perf_counter):
        self.measure = measure
        self.every_versions = every_versions
        self.every_seconds = every_seconds
        self.metrics = metrics
        self.status = status
        self.clock = clock
        self.last_at = clock()

    def due(self, version: int) -> bool:
        return evaluation_due(version, self.clock() - self.last_at, self.every_versions, self.every_seconds)

    def run(self, version: int) -> dict[str, float]:
        accuracy = self.measure()
        self.last_at = self.clock()  # after it: an evaluation longer than eval_every_s must not run every step
        self.metrics.record(version, {f"heldout_accuracy/{k}": v for k, v in accuracy.items()})
        self.status.evaluated(accuracy["mean"])
        # DEBUG: it can run every few seconds; the log's progress line carries the latest (logging.summary_interval_s)
        log.debug("policy version %d: held-out accuracy %.3f", version, accuracy["mean"])
        return accuracy


class OuterSteps:
    """Every `outer.config.every_steps` local steps: one outer step (publishing this node's
    summary while `same_base_peers()` > 0, merging peers'), its summary offered to `summaries_out`
    with the samples trained since the last one (the scheduler varies a step's groups), its
    counters to `status` and, when it judged peers' summaries, the result to `on_outer_step`."""

    def __init__(self, outer: OuterLoop, *, summaries_out: queue.Queue, status: TrainingStatus,
                 same_base_peers: Callable[[], int], on_outer_step: Callable[[OuterResult], None],
                 samples_per_prompt: int):
        self.outer = outer
        self.summaries_out = summaries_out
        self.status = status
        self.same_base_peers = same_base_peers
        self.on_outer_step = on_outer_step
        self.samples_per_prompt = samples_per_prompt
        self.samples_since_outer = 0

    def after_step(self, result: StepResult, local_steps: int, version: int) -> OuterResult | None:
        """Count `result`'s samples; at local step `local_steps` (this one included), when due,
        the outer step on the weights of `version`. Returns the outer step's result, if one ran."""
        self.samples_since_outer += result.groups * self.samples_per_prompt
        if result.trained:  # a step that did not train left last step's .grad in place
            self.outer.add_gradient()
        every = self.outer.config.every_steps
        if local_steps % every != 0:
            return None
        outer_result = self.outer.step(publish=self.same_base_peers() > 0)
        if outer_result.tensors is not None:
            offer_newest(self.summaries_out, OutgoingSummary(outer_result.tensors, local_steps - every, local_steps,
                                                             version, self.samples_since_outer))
        self.samples_since_outer = 0
        self.status.outer_stepped(self.outer.outer_steps, outer_result)
        if outer_result.verdicts:
            self.on_outer_step(outer_result)
        return outer_result


class StepRecorder:
    """Everything done with a finished step on the trainer thread (see the module docstring).

    Holds the step count and the step cadence's clock; `start` runs before the first step,
    `after_step` goes to the runner (called before the step's weights go out), `record` after
    them, `finish` once training.max_steps are done."""

    def __init__(self, *, trainer: Trainer, buffer: ExperienceBuffer, evaluation: HeldoutEvaluation,
                 outer_steps: OuterSteps | None, checkpoints: BackgroundCheckpointer, checkpoint_every: int,
                 max_checkpoint_failures: int, metrics: MetricsStore, status: TrainingStatus, speed: SpeedMeter,
                 on_implausible: Callable[[dict[str, int]], None], samples_per_prompt: int, steps: int,
                 stream_offset: int):
        self.trainer = trainer
        self.buffer = buffer
        self.evaluation = evaluation
        self.outer_steps = outer_steps
        self.checkpoints = checkpoints
        self.checkpoint_every = checkpoint_every
        self.max_checkpoint_failures = max_checkpoint_failures
        self.metrics = metrics
        self.status = status
        self.speed = speed
        self.on_implausible = on_implausible
        self.samples_per_prompt = samples_per_prompt
        self.steps = steps  # local steps done, across restarts (from the checkpoint)
        self.stream_offset = stream_offset  # prompt stream items consumed before this run
        self.last_step_end = time.perf_counter()

    def start(self) -> None:
        """Training begins: status says so, the first evaluation runs, and then the step cadence
        starts (it leaves out loading and the first evaluation)."""
        outer_steps = self.outer_steps.outer.outer_steps if self.outer_steps is not None else 0
        self.status.training(self.trainer.version, self.steps, outer_steps)  # the checkpoint's counts, from the start
        accuracy = self.evaluation.run(self.trainer.version)
        log.info("training from policy version %d (step %d): held-out accuracy %.3f", self.trainer.version, self.steps,
                 accuracy["mean"])
        self.last_step_end = time.perf_counter()

    def after_step(self, result: StepResult) -> None:
        """Before the step's weights go out: the outer step when due (the generator gets the merged weights)."""
        if self.outer_steps is not None:
            self.outer_steps.after_step(result, self.steps + 1, self.trainer.version)  # `record` counts this step later

    def record(self, result: StepResult, dropped: int, items_generated: int) -> None:
        """After the step's weights went out; `dropped` stale groups, `items_generated` prompts so far."""
        self.steps += 1
        self.status.set_version(result.version)
        if result.implausible:
            self.on_implausible(result.implausible)
        if result.trained:  # a step without gradient skips the model: no measure of training speed
            step_seconds = result.seconds + result.pause_seconds
            self.speed.trained(result.groups * self.samples_per_prompt, result.completion_tokens, step_seconds,
                               groups=result.groups)
            self.status.step_took(step_seconds)
        step_end = time.perf_counter()
        self.speed.stepped(step_end - self.last_step_end)
        self.last_step_end = step_end
        self.metrics.record(result.version, {"reward_mean": result.reward_mean, "loss": result.loss,
                                             "groups_used": result.groups_used, "dropped_stale": dropped,
                                             "local_reward_mean": result.local_reward_mean, "step": self.steps,
                                             "local_groups": result.local_groups,
                                             "external_groups": result.external_groups})
        self.status.stepped(result, self.steps, self.buffer, items_generated)
        if result.trained and self.evaluation.due(result.version):
            self.evaluation.run(self.trainer.version)
        if result.trained and result.version % self.checkpoint_every == 0:
            self._save(result.version, items_generated)
        self.check_checkpoints()  # every step: a write that failed stops training at the next one

    def finish(self, items_generated: int) -> None:
        """max_steps are done: a last evaluation, and a checkpoint written before this returns."""
        accuracy = self.evaluation.run(self.trainer.version)
        log.info("training done at step %d (policy version %d): held-out accuracy %.3f", self.steps, self.trainer.version,
                 accuracy["mean"])
        self._save(self.trainer.version, items_generated)
        self.checkpoints.wait()
        self.check_checkpoints()

    def check_checkpoints(self) -> None:
        check_checkpoint_failures(self.checkpoints, self.max_checkpoint_failures)

    def _save(self, version: int, items_generated: int) -> None:
        state = TrainingState(version, self.steps, self.stream_offset + items_generated, {})
        outer = self.outer_steps.outer if self.outer_steps is not None else None
        save_checkpoint(self.checkpoints, self.trainer, outer, state)
