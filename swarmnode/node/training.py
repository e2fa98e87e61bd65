"""The node's local RL: policy, async generator + trainer threads, evaluation, checkpoints, metrics.

Everything here runs on its own threads: the daemon's event loop only calls `start`, `stop`
and `snapshot` (which reads counters under a lock).
"""
from __future__ import annotations

import copy
import logging
import math
import os
import queue
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from swarmnode.config import NodeConfig
from swarmnode.policy import Generator, SamplingParams, load_policy
from swarmnode.policy.hf_backend import HFGenerator
from swarmnode.policy.loading import (
    base_fingerprint,
    base_weights_key,
    cached_base_fingerprint,
    resolve_model_path,
    tokenizer_fingerprint,
)
from swarmnode.protocol.generated import rollout_batch_pb2
from swarmnode.scheduler import DeliveryMeter, Plan, SpeedMeter
from swarmnode.swarm.rollouts import fetch_wanted
from swarmnode.store.checkpoints import (
    BackgroundCheckpointer,
    TrainingState,
    latest_checkpoint,
    load_checkpoint,
    load_outer_state,
)
from swarmnode.status.snapshot import speed_figures
from swarmnode.summaries import CompressionConfig, OuterConfig, OuterLoop, OuterResult
from swarmnode.store.metrics import MetricsStore
from swarmnode.trainer.evaluate import greedy_accuracy, heldout_items, questions_of
from swarmnode.trainer.experience import ScoredGroup
from swarmnode.trainer.intake import IntakeResult, RolloutIntake
from swarmnode.trainer.loop import AsyncRunner, Quotas, RolloutConfig, idle_shares, make_buffer, prompt_stream
from swarmnode.trainer.process_loop import ProcessAsyncRunner
from swarmnode.trainer.trainer import StepResult, Trainer, TrainerConfig

log = logging.getLogger("swarmnode.training")
RECENT_STEPS = 20  # reward_mean over the last this many steps


def rollout_config(config: NodeConfig) -> RolloutConfig:
    t = config.training
    return RolloutConfig(
        prompts_per_step=t.local_rollouts, samples_per_prompt=t.samples_per_prompt, max_staleness=t.max_staleness,
        external_rollouts=t.external_rollouts, external_selection=t.external_selection,
        external_max_staleness=t.external_max_staleness, external_wait_s=t.external_wait_s, tasks=tuple(t.tasks), data_seed=t.data_seed,
        sampling=SamplingParams(temperature=t.temperature, top_p=t.top_p, max_new_tokens=t.max_new_tokens),
    )


def completion_limits(config: NodeConfig) -> dict[str, int]:
    """The longest completion this node takes from a peer: what it would generate itself, and
    for another model's re-tokenised text that times limits.foreign_completion_tokens_factor."""
    limit = config.training.max_new_tokens
    return {"max_completion_tokens": limit,
            "max_foreign_completion_tokens": math.ceil(limit * config.limits.foreign_completion_tokens_factor)}


def trainer_config(config: NodeConfig) -> TrainerConfig:
    t = config.training
    return TrainerConfig(lr=t.lr, max_grad_norm=t.max_grad_norm, eps_low=t.eps_low, eps_high=t.eps_high,
                         temperature=t.temperature, kl_coef=t.kl_coef, external_positive_only=t.external_positive_only,
                         external_max_logprob_gap=config.limits.external_max_logprob_gap,
                         micro_batch_tokens=None if t.micro_batch_tokens == "auto" else t.micro_batch_tokens,
                         forward_chunking=t.forward_chunking, fp32_logits=config.model.fp32_logits,
                         cudnn_attention=config.model.cudnn_attention,
                         foreign_text_objective=t.foreign_text_objective, foreign_shaping_gamma=t.foreign_shaping_gamma)


def generator_options(config: NodeConfig) -> dict:
    """HFGenerator keyword arguments from the model section (decode path, logits, attention)."""
    m = config.model
    return {"decode": m.decode, "fp32_logits": m.fp32_logits, "cudnn_attention": m.cudnn_attention}


def outer_config(config: NodeConfig) -> OuterConfig:
    s = config.summaries
    return OuterConfig(every_steps=s.every_steps, outer_lr=s.outer_lr, outer_momentum=s.outer_momentum,
                       nesterov=s.nesterov, partners_per_step=s.partners_per_step,
                       staleness_exponent=s.staleness_exponent, max_staleness=s.max_staleness,
                       compression=CompressionConfig(s.density, s.bits, s.chunk_size), robust=s.robust_merge,
                       trust_initial=s.trust_initial, trust_skip_below=s.trust_skip_below)


@dataclass(frozen=True)
class OutgoingSummary:
    """A summary made on the trainer thread, for the event loop to seal and publish."""

    tensors: list
    step_start: int
    step_end: int
    base_version: int
    num_samples: int


def make_generator(config: NodeConfig, trainer: Trainer, policy) -> Generator:
    """The configured generation backend, holding the trainer's current weights."""
    if config.model.backend == "vllm":
        import os

        from swarmnode.policy.vllm_backend import VLLMGenerator

        # In-process engine: starts faster, and weight updates pass tensors by reference.
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        generator = VLLMGenerator(
            policy.name, policy.tokenizer, policy_version=trainer.version, dtype=config.model.dtype,
            kv_cache_memory_bytes=config.model.vllm_kv_cache_memory_bytes,
            tensor_parallel_size=config.model.vllm_tensor_parallel_size,
        )
        if trainer.version:
            generator.load_weights(trainer.weights(), trainer.version)  # resumed from a checkpoint
        return generator
    return HFGenerator(copy.deepcopy(trainer.model), policy.tokenizer, policy_version=trainer.version,
                       **generator_options(config))


def fetch_ahead_steps(config: NodeConfig) -> float:
    """rollouts.fetch_ahead_steps, or 0 (fetch everything) while the scheduler is on: it
    measures peers' supply from what arrives, which a paused fetch would hide."""
    return 0.0 if config.scheduler.enabled else config.rollouts.fetch_ahead_steps


def evaluation_due(version: int, seconds_since_last: float, every_versions: int, every_seconds: float) -> bool:
    """Evaluate after this step: at every `every_versions`-th version, or once `every_seconds`
    (> 0) have passed since the last evaluation."""
    return version % every_versions == 0 or 0 < every_seconds <= seconds_since_last


def plan_to_dict(plan: Plan) -> dict[str, Any]:
    """The plan as status shows it (training.plan)."""
    return {"local_rollouts": plan.local_rollouts, "external_rollouts": plan.external_rollouts,
            "external_wait_s": plan.external_wait_s, "steps_per_window": plan.steps_per_window, "reason": plan.reason}


def staleness_histograms(stats) -> dict[str, dict[str, int]]:
    """Groups trained per staleness tau (trained version - behaviour version, on this node's
    clock): all, this node's own, and peers' (tau counted from this node's version at receipt)."""
    def histogram(counter) -> dict[str, int]:
        return {str(k): v for k, v in sorted(counter.items())}
    return {"staleness_histogram": histogram(stats.staleness), "staleness_local": histogram(stats.staleness_local),
            "staleness_external": histogram(stats.staleness_external)}


class CheckpointFailures(RuntimeError):
    """Too many checkpoint writes failed in a row: training on without a save would lose the work."""


OUTGOING_CAPACITY = 256  # generated batches waiting to be shared; the oldest go when full


class TrainingService:
    def __init__(self, config: NodeConfig, home_root: Path, quality: Callable[[], Mapping[str, float]] = dict):
        self.config = config
        self.checkpoints = BackgroundCheckpointer(home_root / "checkpoints")
        self.metrics = MetricsStore(home_root / "metrics.sqlite")
        self.fingerprint = ""
        self.tokenizer_fingerprint = ""
        self.eos_ids: set[int] = set()
        self.quality = quality  # sender id -> quality, for the fresh_quality selection policy
        # Called on the trainer thread with {sender: samples} the trainer dropped as implausible.
        self.on_implausible: Callable[[dict[str, int]], None] = lambda senders: None
        # Called on the trainer thread with each outer step's result (its verdicts on peers' summaries).
        self.on_outer_step: Callable[[OuterResult], None] = lambda result: None
        # Peers' summary trust saved by an earlier run: (peer, score, judged), restored into the outer loop.
        self.saved_trust: list[tuple[str, float, int]] = []
        # Groups generated here, waiting for the node's event loop to share them.
        self.outgoing: queue.Queue[list[ScoredGroup]] = queue.Queue(maxsize=OUTGOING_CAPACITY)
        self.intake: RolloutIntake | None = None
        # Smoothed speeds of this node's real work (generator and trainer threads feed it; the
        # daemon publishes them in its PeerRecord and status).
        self.speed = SpeedMeter()
        # Groups accepted from each verified peer, as groups/s (the scheduler's observed supply).
        self.deliveries = DeliveryMeter(max_peers=config.limits.max_tracked_senders)
        # The scheduler's current plan (node/scheduling.py sets it once per window).
        t = config.training
        self.plan = Plan(t.local_rollouts, t.external_rollouts, t.external_wait_s, None, "not planned yet")
        # Gradient summaries: the outer loop (None until the model is loaded, or when disabled),
        # summaries made here for the event loop to publish, and how many peers in the table
        # share this node's base weights (set by the daemon's poll loop).
        self.home_root = home_root
        self.base_fingerprint = ""
        self.outer: OuterLoop | None = None
        self.summaries_out: queue.Queue[OutgoingSummary] = queue.Queue(maxsize=4)
        self.same_base_peers = 0
        self.outer_counters = {"outer_steps": 0, "merged": 0, "partners_last": 0, "merge_seconds": 0.0,
                               "merge_cpu_seconds": 0.0, "last_merge_at": None}
        self._buffer = None
        self._version = 0
        self._lock = threading.Lock()
        self._runner: AsyncRunner | ProcessAsyncRunner | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._state: dict[str, Any] = {"running": False, "phase": "loading model"}
        self._rewards: deque[float] = deque(maxlen=RECENT_STEPS)
        self._local_rewards: deque[float] = deque(maxlen=RECENT_STEPS)
        self.error: str | None = None
        # Called (from the trainer thread) with a one-line reason when the node must stop:
        # storage.max_checkpoint_failures checkpoint writes failed in a row.
        self.on_fatal: Callable[[str], None] | None = None

    # -- swarm sharing (called from the node's worker threads) ---------------------------------

    @property
    def ready(self) -> bool:
        """The policy is loaded and the buffer exists: peers' rollouts can be taken."""
        return self.intake is not None and self._buffer is not None

    def _share(self, groups: list[ScoredGroup]) -> None:
        if not self.config.rollouts.share:
            return
        while True:
            try:
                self.outgoing.put_nowait(groups)
                return
            except queue.Full:
                try:
                    self.outgoing.get_nowait()  # peers want fresh rollouts: drop the oldest
                except queue.Empty:
                    pass

    def receive(self, batch: rollout_batch_pb2.RolloutBatch, sender: str) -> IntakeResult:
        """Check and re-score a peer's batch; accepted groups go to the experience buffer."""
        assert self.intake is not None and self._buffer is not None
        result = self.intake.accept(batch, sender, self._version)
        if result.groups:
            self._buffer.put(result.groups)
            self.deliveries.delivered(sender, len(result.groups))
        return result

    def external_wanted(self) -> bool:
        """Whether gossip should fetch peers' batches now (swarm/rollouts.fetch_wanted)."""
        buffer, ahead = self._buffer, fetch_ahead_steps(self.config)
        if buffer is None or ahead <= 0:
            return True  # no pool yet, or fetch everything: no need to count the pool (event loop)
        return fetch_wanted(buffer.external_usable(self._version), self.plan.external_rollouts, ahead)

    def apply_plan(self, plan: Plan) -> None:
        """The runner takes `plan`'s quotas from its next batch and step (any thread)."""
        self.plan = plan
        runner = self._runner
        if runner is not None:
            runner.quotas = Quotas(plan.local_rollouts, plan.external_rollouts, plan.external_wait_s)

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
        except CheckpointFailures as e:
            self.error = str(e)
            with self._lock:
                self._state.update(running=False, phase=f"failed: {self.error}")
            if self.on_fatal is not None:
                self.on_fatal(self.error)  # the daemon logs it and stops
            else:
                log.error("training stopped: %s", self.error)
        except Exception as e:  # noqa: BLE001 - shown in status; the node keeps serving the swarm
            self.error = f"{type(e).__name__}: {e}"
            log.exception("training stopped")
            with self._lock:
                self._state.update(running=False, phase=f"failed: {self.error}")

    def _train(self) -> None:
        import torch

        t = self.config.training
        if t.threads:
            torch.set_num_threads(t.threads)
        elif t.generator == "process":
            # The generator child takes one core; a trainer on every core would oversubscribe them.
            torch.set_num_threads(max(1, (os.cpu_count() or 2) - 1))
        policy = load_policy(self.config.model.name_or_path, device=self.config.model.device, dtype=self.config.model.dtype)
        self.fingerprint = policy.fingerprint
        self.tokenizer_fingerprint = tokenizer_fingerprint(policy.tokenizer)
        eos = policy.tokenizer.eos_token_id
        self.eos_ids = {eos} if isinstance(eos, int) else set(eos)
        # Hashed before any checkpoint is loaded: the weights every node of this base started from.
        self.base_fingerprint = cached_base_fingerprint(
            self.home_root, base_weights_key(self.config.model.name_or_path, resolve_model_path(self.config.model.name_or_path),
                             dtype=self.config.model.dtype),
            lambda: base_fingerprint(policy.model))
        trainer = Trainer(policy.model, policy.tokenizer.pad_token_id, trainer_config(self.config))
        state = TrainingState(version=0, steps=0, stream_position=0, extra={})
        resumed = latest_checkpoint(self.checkpoints.root)
        if resumed is not None:
            state = load_checkpoint(resumed, trainer.model, trainer.optimizer)
            trainer.version = state.version
            log.info("resumed from %s at policy version %d", resumed.name, state.version)
        if self.config.summaries.enabled:
            outer = OuterLoop(trainer.model, outer_config(self.config), max_peers=self.config.limits.max_tracked_senders,
                              seed=t.data_seed)
            saved = load_outer_state(resumed) if resumed is not None else None
            if saved is not None:
                outer.load(saved, state.extra.get("outer", {}))
                log.info("resumed the outer loop at outer step %d", outer.outer_steps)
            for peer, score, judged in self.saved_trust:
                outer.trust.restore(peer, score, judged)
            self.outer = outer
        evaluator = HFGenerator(trainer.model, policy.tokenizer, **generator_options(self.config))
        rollout = rollout_config(self.config)
        items = heldout_items(rollout.tasks, t.eval_size)
        start_index = state.stream_position // len(rollout.tasks)
        self._version = trainer.version
        buffer = make_buffer(rollout, quality=self.quality, seed=rollout.data_seed)
        if t.generator == "process":
            # The child loads the model itself and takes the trainer's weights before its first batch.
            runner = ProcessAsyncRunner(policy.name, trainer, rollout, stream_start=start_index,
                                        exclude=questions_of(items), threads=1, buffer=buffer, on_generated=self._share,
                                        dtype=self.config.model.dtype, slowdown=t.slowdown)
        else:
            stream = prompt_stream(rollout.tasks, rollout.data_seed, start_index, exclude=questions_of(items))
            runner = AsyncRunner(make_generator(self.config, trainer, policy), trainer, stream, rollout,
                                 buffer=buffer, on_generated=self._share, slowdown=t.slowdown)
        runner.on_generate_timing = self.speed.generated
        self._runner = runner  # first: a plan applied from now on reaches the runner
        plan = self.plan  # the newest plan (made before the model loaded, or just now)
        runner.quotas = Quotas(plan.local_rollouts, plan.external_rollouts, plan.external_wait_s)
        # Its own tokenizer copy: fast tokenizers are not safe to share across threads.
        self.intake = RolloutIntake(copy.deepcopy(policy.tokenizer), model_fingerprint=policy.fingerprint,
                                    base_fingerprint=self.base_fingerprint, tasks=list(rollout.tasks), temperature=rollout.sampling.temperature,
                                    **completion_limits(self.config))
        self._buffer = buffer
        steps = state.steps

        last_eval_at = time.perf_counter()

        def evaluate() -> None:
            nonlocal last_eval_at
            accuracy = greedy_accuracy(evaluator, items, rollout.sampling.max_new_tokens)
            last_eval_at = time.perf_counter()  # after it: an evaluation longer than eval_every_s must not run every step
            self.metrics.record(trainer.version, {f"heldout_accuracy/{k}": v for k, v in accuracy.items()})
            with self._lock:
                self._state["heldout_accuracy"] = round(accuracy["mean"], 4)
            log.info("policy version %d: held-out accuracy %.3f", trainer.version, accuracy["mean"])

        def on_step(result: StepResult, dropped: int) -> None:
            nonlocal steps, last_step_end
            steps += 1
            self._version = result.version
            if result.implausible:
                self.on_implausible(result.implausible)
            if result.local_reward_mean is not None:
                self._local_rewards.append(result.local_reward_mean)
            if result.trained:  # a step without gradient skips the model: no measure of training speed
                self.speed.trained(result.groups * rollout.samples_per_prompt, result.completion_tokens,
                                   result.seconds + result.pause_seconds, groups=result.groups)
            step_end = time.perf_counter()
            self.speed.stepped(step_end - last_step_end)
            last_step_end = step_end
            self._rewards.append(result.reward_mean)
            position = start_index * len(rollout.tasks) + runner.items_generated
            self.metrics.record(result.version, {"reward_mean": result.reward_mean, "loss": result.loss,
                                                 "groups_used": result.groups_used, "dropped_stale": dropped,
                                                 "local_reward_mean": result.local_reward_mean, "step": steps,
                                                 "local_groups": result.local_groups,
                                                 "external_groups": result.external_groups})
            with self._lock:
                self._state.update(
                    running=True, phase="training", policy_version=result.version, steps=steps,
                    reward_mean=round(sum(self._rewards) / len(self._rewards), 4),
                    local_reward_mean=round(sum(self._local_rewards) / len(self._local_rewards), 4)
                    if self._local_rewards else None,
                    external_trained=runner.buffer.stats.external_taken,
                    external_trained_by_task=dict(runner.buffer.stats.external_taken_by_task),
                    own_success={task: round(s, 4) for task, s in sorted(runner.buffer.own_success_snapshot().items())},
                    external_pool=runner.buffer.external_available(),
                    **staleness_histograms(runner.buffer.stats),
                    dropped_stale=runner.buffer.stats.dropped_stale,
                    groups_generated=runner.items_generated,
                    external_trained_by_sender=dict(runner.buffer.stats.external_taken_by_sender),
                )
            if result.trained and evaluation_due(result.version, time.perf_counter() - last_eval_at, t.eval_every, t.eval_every_s):
                evaluate()
            if result.trained and result.version % t.checkpoint_every == 0:
                self._save_checkpoint(trainer, TrainingState(result.version, steps, position, {}))
            self._check_checkpoints()  # every step: a write that failed stops training at the next one

        samples_since_outer = 0  # the scheduler varies a step's groups: count what was trained

        def after_step(result: StepResult) -> None:
            nonlocal samples_since_outer
            local_steps = steps + 1  # on_step counts this step after the weights went out
            samples_since_outer += result.groups * rollout.samples_per_prompt
            if self.outer is not None and local_steps % self.outer.config.every_steps == 0:
                self._outer_step(trainer, local_steps, samples_since_outer)
                samples_since_outer = 0

        runner.after_step = after_step
        with self._lock:
            self._state.update(running=True, phase="training", policy_version=trainer.version, steps=steps)
        evaluate()
        last_step_end = time.perf_counter()  # the step cadence leaves out loading and the first evaluation
        remaining = None if t.max_steps is None else max(0, t.max_steps - steps)
        if not self._stopping.is_set() and remaining != 0:
            runner.run(remaining, on_step)
        if remaining is not None and not self._stopping.is_set():
            evaluate()
            self._save_checkpoint(trainer, TrainingState(trainer.version, steps, start_index * len(rollout.tasks) + runner.items_generated, {}))
            self.checkpoints.wait()
            self._check_checkpoints()
        with self._lock:
            self._state.update(running=False, phase="done" if remaining is not None and not self._stopping.is_set() else "stopped")

    def _outer_step(self, trainer: Trainer, local_steps: int, samples: int) -> None:
        """Every summaries.every_steps steps: publish this node's summary (while a same-base peer
        is in the swarm) and merge peers' into the weights."""
        assert self.outer is not None
        every = self.outer.config.every_steps
        result: OuterResult = self.outer.step(publish=self.same_base_peers > 0)
        if result.tensors is not None:
            outgoing = OutgoingSummary(result.tensors, local_steps - every, local_steps, trainer.version,
                                       samples)
            try:
                self.summaries_out.put_nowait(outgoing)
            except queue.Full:  # the event loop is behind: peers want the newest summary anyway
                try:
                    self.summaries_out.get_nowait()
                except queue.Empty:
                    pass
                self.summaries_out.put_nowait(outgoing)
        with self._lock:
            c = self.outer_counters
            c["outer_steps"] = self.outer.outer_steps
            c["merge_seconds"] += result.seconds
            c["merge_cpu_seconds"] += result.cpu_seconds
            c["partners_last"] = len(result.partners)
            if result.partners:
                c["merged"] += len(result.partners)
                c["last_merge_at"] = time.monotonic()
        if result.verdicts:
            self.on_outer_step(result)

    def _save_checkpoint(self, trainer: Trainer, state: TrainingState) -> None:
        outer_state = None
        if self.outer is not None:
            outer_state = self.outer.state_tensors()
            state.extra["outer"] = self.outer.state_meta()
        self.checkpoints.save(trainer.model, trainer.optimizer, state, outer_state)

    def outer_snapshot(self) -> dict[str, Any]:
        with self._lock:
            return dict(self.outer_counters)

    def _check_checkpoints(self) -> None:
        """Raise CheckpointFailures once storage.max_checkpoint_failures writes in a row failed."""
        failures = self.checkpoints.consecutive_failures
        if failures >= self.config.storage.max_checkpoint_failures:
            root = self.checkpoints.root
            raise CheckpointFailures(
                f"checkpoint writes failed {failures} times in a row (last: {self.checkpoints.last_error}); "
                f"make {root} a writable folder with free space, then restart")

    # -- status --------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            state = dict(self._state)
        return {
            "running": state.get("running", False),
            "phase": state.get("phase"),
            "model": self.config.model.name_or_path,
            "policy_version": state.get("policy_version"),
            "steps": state.get("steps"),
            "reward_mean": state.get("reward_mean"),
            "local_reward_mean": state.get("local_reward_mean"),
            "external_trained": state.get("external_trained"),
            "external_trained_by_task": state.get("external_trained_by_task"),
            "own_success": state.get("own_success"),
            "external_pool": state.get("external_pool"),
            "heldout_accuracy": state.get("heldout_accuracy"),
            **speed_figures(self.speed.snapshot()),
            "slowdown": self.config.training.slowdown,
            "staleness_histogram": state.get("staleness_histogram"),
            "staleness_local": state.get("staleness_local"),
            "staleness_external": state.get("staleness_external"),
            "dropped_stale": state.get("dropped_stale"),
            "groups_generated": state.get("groups_generated"),
            "external_trained_by_sender": state.get("external_trained_by_sender"),
            "plan": plan_to_dict(self.plan),
            **(idle_shares(self._runner) if self._runner is not None else {"generator_idle_share": None, "trainer_idle_share": None}),
            "error": self.error,
        }
