"""Building the node's training from its config: policy, trainer, outer loop, runner, intake.

The config -> dataclass helpers (`rollout_config`, `trainer_config`, `outer_config`, ...) are
plain functions; the builders (`load_node_policy`, `resume_trainer`, `build_outer_loop`,
`make_evaluator`, `build_runner`, `build_intake`) each make one part, in the order the training service calls
them on its thread (node/training/service.py).
"""
from __future__ import annotations

import copy
import logging
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from swarmnode.config import NodeConfig
from swarmnode.node.preflight import lookup_model
from swarmnode.trainer.intake import RolloutIntake
from swarmnode.policy import Generator, SamplingParams, load_policy
from swarmnode.policy.hf_backend import HFGenerator
from swarmnode.policy.loading import (
    architecture_fingerprint,
    base_fingerprint,
    base_weights_key,
    cached_base_fingerprint,
    resolve_model_path,
    tokenizer_fingerprint,
)
from swarmnode.store.checkpoint_model import (
    RESET_HINT,
    CheckpointModel,
    CheckpointOfAnotherModel,
    mismatch_line,
    parameters_fingerprint,
    read_checkpoint_model,
    saved_parameter_shapes,
)
from swarmnode.store.checkpoints import TrainingState, latest_checkpoint, load_checkpoint, load_outer_state
from swarmnode.protocol.codec import MAX_BODY_BYTES, MessageKind
from swarmnode.summaries import CompressionConfig, OuterConfig, OuterLoop
from swarmnode.summaries.compress import gap_coded_bytes_at_most, largest_density_within
from swarmnode.trainer.buffer import ExperienceBuffer
from swarmnode.trainer.loop import AsyncRunner, RolloutConfig, prompt_stream
from swarmnode.trainer.process_loop import ProcessAsyncRunner
from swarmnode.trainer.trainer import StepResult, Trainer, TrainerConfig
from swarmnode.utils.errors import first_line

log = logging.getLogger("swarmnode.training")


# -- config -> dataclasses -------------------------------------------------------------------------


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


# -- builders ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PolicyIdentity:
    """What peers compare with this node's: the model and tokenizer fingerprints and end-of-sequence ids."""

    fingerprint: str
    tokenizer_fingerprint: str
    eos_ids: set[int]


def load_node_policy(config: NodeConfig):
    """Set torch's thread count for this node, then load the configured policy (a LoadedPolicy)."""
    import torch

    t = config.training
    if t.threads:
        torch.set_num_threads(t.threads)
    elif t.generator == "process":
        # The generator child takes one core; a trainer on every core would oversubscribe them.
        torch.set_num_threads(max(1, (os.cpu_count() or 2) - 1))
    name = config.model.name_or_path
    if lookup_model(name).kind == "hub":  # the download (or its retries, in the log file) can take a while
        log.info("loading model %s from the Hugging Face hub or its local cache (the first run downloads it)", name)
    return load_policy(name, device=config.model.device, dtype=config.model.dtype)


def policy_identity(policy) -> PolicyIdentity:
    eos = policy.tokenizer.eos_token_id
    return PolicyIdentity(policy.fingerprint, tokenizer_fingerprint(policy.tokenizer),
                          {eos} if isinstance(eos, int) else set(eos))


def node_base_weights_key(config: NodeConfig) -> str:
    """The key the configured model's base fingerprint is cached under (policy.loading.base_weights_key)."""
    name = config.model.name_or_path
    return base_weights_key(name, resolve_model_path(name), dtype=config.model.dtype)


def node_base_fingerprint(config: NodeConfig, home_root: Path, policy) -> str:
    """The fingerprint of the weights every node of this base started from (cached in the home;
    hash it before any checkpoint is loaded)."""
    return cached_base_fingerprint(home_root, node_base_weights_key(config), lambda: base_fingerprint(policy.model))


def checkpoint_model(config: NodeConfig, policy, base: str, key: str) -> CheckpointModel:
    """The model this node's checkpoints belong to: the configured name, base weights `base`
    (cached under `key`) and the loaded model's architecture."""
    model = policy.model
    shapes = {name: tuple(tensor.shape) for name, tensor in model.state_dict().items()}
    return CheckpointModel(name_or_path=config.model.name_or_path, base_fingerprint=base, base_weights_key=key,
                           dtype=config.model.dtype, model_type=str(getattr(model.config, "model_type", type(model).__name__)),
                           architecture=architecture_fingerprint(model.config.to_dict()),
                           parameters=parameters_fingerprint(shapes))


class CheckpointUnloadable(Exception):
    """The newest checkpoint failed to load; `str(e)` is one line saying which and what to do."""


def resume_trainer(config: NodeConfig, policy, checkpoints_root: Path,
                   model: CheckpointModel) -> tuple[Trainer, TrainingState, Path | None]:
    """The trainer on the policy's model, resumed from the newest checkpoint under `checkpoints_root`
    if there is one and it belongs to `model` (else CheckpointOfAnotherModel, before any weight of
    it is read). Returns (trainer, the state it resumed from, that checkpoint or None)."""
    resumed = latest_checkpoint(checkpoints_root)
    if resumed is not None:
        recorded = read_checkpoint_model(resumed)
        shapes = saved_parameter_shapes(resumed) if recorded is None else None
        if (line := mismatch_line(checkpoints_root.parent, resumed.name, recorded, shapes, model)) is not None:
            raise CheckpointOfAnotherModel(line)
    trainer = Trainer(policy.model, policy.tokenizer.pad_token_id, trainer_config(config))
    state = TrainingState(version=0, steps=0, stream_position=0, extra={})
    if resumed is not None:
        try:
            state = load_checkpoint(resumed, trainer.model, trainer.optimizer)
        except Exception as e:  # noqa: BLE001 - whatever the cause, one line (the traceback goes to the log file)
            raise CheckpointUnloadable(
                f"checkpoint {resumed} cannot be loaded into {config.model.name_or_path}: {first_line(e)[:300]}; "
                f"use another --home, or move the old training aside with: "
                f"{RESET_HINT.format(home=checkpoints_root.parent)}") from e
        trainer.resumed_at(state.version)
        log.info("resumed from %s at policy version %d", resumed.name, state.version)
    return trainer, state, resumed


class SummariesTooLarge(ValueError):
    """This model's gradient summaries, at the configured density, can be larger than one summary
    may be on the wire: a node finds out at its start, not at its first summary."""


def check_summary_size(shapes: dict[str, tuple[int, ...]], compression: CompressionConfig) -> None:
    """Raise SummariesTooLarge, naming the density that fits, when a gap-coded summary of
    `shapes` can exceed the GRADIENT_SUMMARY body cap."""
    cap = MAX_BODY_BYTES[MessageKind.GRADIENT_SUMMARY]
    most = gap_coded_bytes_at_most(shapes, compression)
    if most <= cap:
        return
    fits = largest_density_within(shapes, compression, cap)
    fix = (f"set summaries.density to {fits:g} or lower" if fits is not None
           else f"raise summaries.chunk_size (now {compression.chunk_size})")
    params = sum(math.prod(s) for s in shapes.values())
    raise SummariesTooLarge(
        f"gradient summaries of this model ({params:,} parameters) at summaries.density {compression.density:g} "
        f"can reach {most / 2**20:.1f} MiB, over the {cap / 2**20:.2f} MiB a summary may be: {fix}, "
        "or summaries.enabled: false")


def build_outer_loop(config: NodeConfig, trainer: Trainer, resumed: Path | None, state: TrainingState,
                     saved_trust: list[tuple[str, float, int]]) -> OuterLoop | None:
    """The gradient summaries' outer loop (None when summaries are off), resumed from the
    checkpoint and with peers' trust as an earlier run left it ((peer, score, judged))."""
    if not config.summaries.enabled:
        return None
    outer = OuterLoop(trainer.model, outer_config(config), max_peers=config.limits.max_tracked_senders,
                      seed=config.training.data_seed)
    check_summary_size(outer.shapes, outer.config.compression)
    saved = load_outer_state(resumed) if resumed is not None else None
    if saved is not None:
        outer.load(saved, state.extra.get("outer", {}))
        log.info("resumed the outer loop at outer step %d", outer.outer_steps)
    for peer, score, judged in saved_trust:
        outer.trust.restore(peer, score, judged)
    return outer


def make_generator(config: NodeConfig, trainer: Trainer, policy) -> Generator:
    """The configured generation backend, holding the trainer's current weights."""
    if config.model.backend == "vllm":
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


def make_evaluator(config: NodeConfig, trainer: Trainer, policy) -> HFGenerator:
    """The held-out evaluation's generator: greedy decoding on the trainer's own model."""
    return HFGenerator(trainer.model, policy.tokenizer, **generator_options(config))


def build_runner(config: NodeConfig, policy, trainer: Trainer, rollout: RolloutConfig, buffer: ExperienceBuffer, *,
                 stream_start: int, exclude: frozenset, on_generated: Callable[[list], None],
                 after_step: Callable[[StepResult], None],
                 on_generate_timing: Callable[[int, float, int], None]) -> AsyncRunner | ProcessAsyncRunner:
    """The runner of training.generator's kind: generation on a thread (the configured backend)
    or in a child process, the prompt stream from item `stream_start` without `exclude`."""
    t = config.training
    if t.generator == "process":
        # The child loads the model itself and takes the trainer's weights before its first batch.
        return ProcessAsyncRunner(policy.name, trainer, rollout, stream_start=stream_start, exclude=exclude, threads=1,
                                  buffer=buffer, on_generated=on_generated, dtype=config.model.dtype,
                                  slowdown=t.slowdown, after_step=after_step, on_generate_timing=on_generate_timing,
                                  generator_options=generator_options(config))
    stream = prompt_stream(rollout.tasks, rollout.data_seed, stream_start, exclude=exclude)
    return AsyncRunner(make_generator(config, trainer, policy), trainer, stream, rollout, buffer=buffer,
                       on_generated=on_generated, slowdown=t.slowdown, after_step=after_step,
                       on_generate_timing=on_generate_timing)


def build_intake(config: NodeConfig, policy, base: str, rollout: RolloutConfig) -> RolloutIntake:
    """The checks and scoring of peers' batches, with its own tokenizer copy (fast tokenizers are
    not safe to share across threads)."""
    return RolloutIntake(copy.deepcopy(policy.tokenizer), model_fingerprint=policy.fingerprint,
                         base_fingerprint=base, tasks=list(rollout.tasks), temperature=rollout.sampling.temperature,
                         **completion_limits(config))
