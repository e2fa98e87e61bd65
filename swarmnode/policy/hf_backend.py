"""The `hf` generation backend: batched sampling with a KV cache on a transformers model.

The decode paths (`HFGenerator(decode=...)`, config `model.decode`):

- `loop`: a hand-written cached loop. It skips generate()'s per-step processor machinery,
  prefills each prompt once for all its samples and drops a sample from the batch as soon as
  it has ended.
- `bucketed`: the same loop, but the batch only shrinks to power-of-two sizes (finished rows
  ride along, masked), so attention shapes repeat. Slower than `loop` once cuDNN's attention is
  out of the way (below); kept as an option.
- `generate`: `model.generate`. It draws from the same distribution as the loop (NodeSampling
  is its only logits processor; a hub model's generation_config.json is not applied) and keeps
  one step's logits at a time for the behaviour log-probs.
- `static`: `model.generate` with transformers' static KV cache. On a GPU transformers compiles
  the decode step and replays it as CUDA graphs; the first batch of each shape pays the
  compile, and its seconds are logged once per shape. Rows and prompt length are padded up to
  a few bucketed sizes (static_shape) so that a run builds few graphs (a second row count and a
  second cache length each recompile once with that size made dynamic; later shapes reuse that
  graph); padding rows are dropped from the result. A static decode that fails is said once in
  the log and the loop takes over for good. Not in `auto` until measured in a node. Run it in
  the generator process (training.generator: process): torch before 2.13 is reported to refuse
  compiling CUDA graphs off the main thread, and then this path falls back to the loop.

On a GPU the decode steps run with cuDNN's attention excluded (policy/attention.py; config
`model.cudnn_attention`): rows leaving the batch change the attention shape nearly every
step, and cuDNN plans each new shape, which costs more CPU per call than the step itself.

`auto` (the default) measures: on a GPU the loop and generate take turns on the first batches
and the faster stays (AUTO_DECODE, AUTO_TRIALS; `static` is not among them yet); on a CPU it is
the loop, the faster there. The figures behind each choice: docs/experiments/gpu.md and
docs/experiments/cpu-throughput.md (`scripts/bench/bench_generation.py`).
"""
from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from typing import Mapping, Sequence

import torch
from transformers import DynamicCache, GenerationConfig, LogitsProcessor, LogitsProcessorList

from swarmnode.policy.attention import attention_backends
from swarmnode.policy.generation import (
    Completion,
    PromptGeneration,
    SamplingParams,
    finish_completion,
)
from swarmnode.policy.kv_cache import returned_cache, with_cache
from swarmnode.policy.precision import use_fp32_logits
from swarmnode.policy.prompts import format_prompt, left_pad, left_pad_positions
from swarmnode.policy.sampling import sample_next, sampling_distribution

log = logging.getLogger("swarmnode.generation")

DECODES = ("auto", "loop", "bucketed", "generate", "static")
# "auto" tries these paths on the first batches and keeps the fastest (see HFGenerator.decode).
# On a CPU the loop is well ahead of model.generate, so it is not put on trial; on a GPU the
# winner depends on the model and dtype (docs/experiments/gpu.md, cpu-throughput.md). Device
# types not listed use the CPU's.
AUTO_DECODE = {"cpu": ("loop",), "cuda": ("loop", "generate")}  # static: opt-in until measured in a node
AUTO_TRIALS = 3  # batches each candidate runs before "auto" settles (the best counts: the first warms up)
STATIC_MIN_ROWS = 8  # the smallest row bucket of a static decode
PROMPT_LENGTH_BUCKET = 32  # a static decode's prompt length is a multiple of this


def decode_candidates(decode: str, device: torch.device) -> tuple[str, ...]:
    """The decode paths a generator may run: `decode` itself, or for "auto" the device type's candidates."""
    if decode not in DECODES:
        raise ValueError(f"model.decode is one of {', '.join(DECODES)}, got {decode!r}")
    return AUTO_DECODE.get(device.type, AUTO_DECODE["cpu"]) if decode == "auto" else (decode,)


def fastest(rates: dict[str, list[float]]) -> str:
    """The path whose best trial was fastest: argmax_path max_trial tokens/s (the best trial,
    since a path's first call also pays its warm-up). A path without trials counts as 0."""
    return max(rates, key=lambda path: max(rates[path], default=0.0))


def next_power_of_two(n: int) -> int:
    """The smallest power of two >= n: 2 ** ceil(log2(n)) (1 for n <= 1)."""
    return 1 << max(0, n - 1).bit_length()


def bucket_size(running: int, width: int) -> int:
    """Rows a bucketed decode batch keeps: the smallest power of two >= running, at most width.

        size = min(width, next_power_of_two(running))
    """
    return min(width, next_power_of_two(running))


def static_shape(rows: int, prompt_length: int) -> tuple[int, int]:
    """The (rows, prompt length) a static decode runs at, so that batches share few compiled shapes:

        rows'   = max(STATIC_MIN_ROWS, next_power_of_two(rows))
        length' = PROMPT_LENGTH_BUCKET x ceil(prompt_length / PROMPT_LENGTH_BUCKET)
    """
    return (max(STATIC_MIN_ROWS, next_power_of_two(rows)),
            PROMPT_LENGTH_BUCKET * -(-prompt_length // PROMPT_LENGTH_BUCKET))


class NodeSampling(LogitsProcessor):
    """model.generate's only logits processor in the generate and static decodes.

    Each step it turns the logits into this node's sampling distribution (sampling_distribution:
    temperature, then top-p), so that generate() draws from exactly what the loop draws from;
    generate()'s own warpers stay off (own_generation_config, top_k=0). It keeps the sampled
    tokens' log-probs one step behind (a step's token is known at the next call) instead of
    output_logits, which holds every step's [B, V] logits as float32 copies: 512 rows x 128
    tokens of a 152k-token vocabulary is 40 GB.
    """

    def __init__(self, temperature: float, top_p: float):
        self.temperature, self.top_p = temperature, top_p
        self._step_logprobs: torch.Tensor | None = None  # the last step's [B, V] log-probs
        self._taken: list[torch.Tensor] = []  # [B] per step: the sampled tokens' log-probs

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        if self._step_logprobs is not None:
            self._take(input_ids[:, -1])  # the token sampled at the last call
        self._step_logprobs, draw_from = sampling_distribution(scores, self.temperature, self.top_p)
        return draw_from

    def _take(self, tokens: torch.Tensor) -> None:
        self._taken.append(self._step_logprobs.gather(-1, tokens[:, None]).squeeze(-1))
        self._step_logprobs = None

    def logprobs(self, tokens: torch.Tensor) -> torch.Tensor:
        """[B, T] log-probs of generate()'s new tokens [B, T] (taking the last step's). A step
        beyond T is dropped: transformers' deferred stop check (used on mps) runs one decoding
        step more and then takes its token back."""
        length = tokens.shape[1]
        if self._step_logprobs is not None and len(self._taken) < length:
            self._take(tokens[:, len(self._taken)])
        if len(self._taken) < length:
            raise RuntimeError(f"generate() made {length} tokens in {len(self._taken)} logits steps")
        return torch.stack(self._taken[:length], dim=1)


@contextmanager
def own_generation_config(model):
    """generate() fills what a call leaves unset from the model's generation_config: a hub
    model's generation_config.json (Qwen2.5's instruct models ship temperature 0.7, top_p 0.8,
    top_k 20 and a repetition penalty) would bend the distribution the node samples from away
    from the one its trainer scores. For the call, the model has a config of its special tokens
    only.
    Calls on one model must not overlap (they do not: a node's generator has its own model copy,
    or shares the trainer's in a synchronous loop that generates and trains in turn)."""
    saved = model.generation_config
    model.generation_config = GenerationConfig(bos_token_id=saved.bos_token_id, eos_token_id=saved.eos_token_id,
                                               pad_token_id=saved.pad_token_id)
    try:
        yield
    finally:
        model.generation_config = saved


class HFGenerator:
    def __init__(self, model, tokenizer, *, policy_version: int = 0, decode: str = "auto",
                 fp32_logits: bool = False, cudnn_attention: bool = False):
        self.model = model.eval()
        self.device = next(model.parameters()).device
        # tokens/s of each trial batch per candidate path (one candidate: no trials)
        self.decode_rates: dict[str, list[float]] = {path: [] for path in decode_candidates(decode, self.device)}
        if fp32_logits:
            use_fp32_logits(self.model)
        self.cudnn_attention = cudnn_attention  # see attention_backends
        self.tokenizer = tokenizer
        self.policy_version = policy_version
        eos = tokenizer.eos_token_id
        eos_ids = [eos] if isinstance(eos, int) else list(eos)
        self.eos_ids = torch.tensor(eos_ids, dtype=torch.long, device=self.device)
        self._eos = set(eos_ids)
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else int(self.eos_ids[0])
        # Static decode: seconds of the first batch of each (rows, cache length) shape (its compile, on a GPU).
        self.static_shapes: dict[tuple[int, int], float] = {}

    @property
    def decode(self) -> str:
        """The path the next batch runs: candidates take turns until each has run AUTO_TRIALS
        batches, then the fastest (the only one when decode is not "auto")."""
        trials = min(self.decode_rates, key=lambda path: len(self.decode_rates[path]))
        if len(self.decode_rates) > 1 and len(self.decode_rates[trials]) < AUTO_TRIALS:
            return trials
        return fastest(self.decode_rates)

    @property
    def on_trial(self) -> bool:
        return len(self.decode_rates) > 1 and min(len(r) for r in self.decode_rates.values()) < AUTO_TRIALS

    def load_weights(self, state_dict: Mapping[str, torch.Tensor], version: int) -> None:
        self.model.load_state_dict(state_dict)
        self.policy_version = version

    def generate(self, prompts: Sequence[str], samples_per_prompt: int, params: SamplingParams) -> list[PromptGeneration]:
        # A trial times the whole call (tokenising and decoding text too): on a small model
        # that is most of it, and it differs between the paths.
        path, on_trial, start = self.decode, self.on_trial, time.perf_counter()
        prompt_ids = [self.tokenizer(format_prompt(self.tokenizer, q), add_special_tokens=False)["input_ids"] for q in prompts]
        generator = None
        if params.seed is not None:
            generator = torch.Generator(device=self.device).manual_seed(params.seed)
        decode = {"generate": self._decode_generate, "static": self._decode_static}.get(path, self._decode_loop)
        shapes_before = len(self.static_shapes)
        with attention_backends(self.device, self.cudnn_attention):
            try:
                tokens, logprobs = decode(prompt_ids, samples_per_prompt, params, generator)
            except Exception as e:  # noqa: BLE001 - a graph capture or compile can fail in many ways
                if path != "static":
                    raise
                self._give_up_static(e)
                path, on_trial = "loop", False
                tokens, logprobs = self._decode_loop(prompt_ids, samples_per_prompt, params, generator)
        for (rows, length), seconds in list(self.static_shapes.items())[shapes_before:]:
            log.info("static decode: the first batch of %d rows x %d cached tokens took %.1f s "
                     "(on a GPU, compiling its graphs included)", rows, length, seconds)
        groups = []
        for p, (question, ids) in enumerate(zip(prompts, prompt_ids)):
            group = PromptGeneration(question, ids, policy_version=self.policy_version)
            for r in range(p * samples_per_prompt, (p + 1) * samples_per_prompt):
                group.completions.append(self._completion(tokens[r], logprobs[r], params))
            groups.append(group)
        if on_trial:
            tokens_made = sum(len(c.token_ids) for g in groups for c in g.completions)
            self.decode_rates[path].append(tokens_made / (time.perf_counter() - start))
        return groups

    def _give_up_static(self, error: Exception) -> None:
        """The static decode failed: said once, and the loop takes its place for good."""
        log.warning("static decode failed (%s: %s); decoding with the loop from now on",
                    type(error).__name__, str(error).splitlines()[0][:200] if str(error) else "")
        self.decode_rates.pop("static", None)
        self.decode_rates.setdefault("loop", [])

    # -- decoding ------------------------------------------------------------------------------

    def _rows_to_keep(self, done: torch.Tensor) -> torch.Tensor | None:
        """Batch positions to keep after a step ([] when every row has ended; None: keep all).

        loop: the rows still running. bucketed: the running rows first, then finished ones as
        filler up to bucket_size(running, batch); the same batch while that is its size.
        One host sync per step either way (generate() has one too, for its stopping check).
        """
        if self.decode == "bucketed":
            running = int((~done).sum())
            size = bucket_size(running, len(done)) if running else 0
            if size == len(done):
                return None
            return torch.argsort(done.to(torch.int8), stable=True)[:size]
        if not bool(done.any()):
            return None
        return (~done).nonzero().squeeze(1)

    @torch.inference_mode()
    def _decode_loop(self, prompt_ids, samples, params, generator) -> tuple[torch.Tensor, torch.Tensor]:
        """Cached decoding. Returns [B, T] tokens and log-probs, B = len(prompt_ids) * samples.

        Two savings over decoding every row to the end:
        - each prompt is prefilled once and its KV cache repeated for its `samples` rows (the
          rows of a group share the prompt, so a per-row prefill repeats the same work);
        - a row that has sampled an end token leaves the batch (see _rows_to_keep): later steps
          run the model on fewer rows (short answers finish in 2-4 tokens while a few samples
          run to max_new_tokens).
        Finished positions hold the pad token and log-prob 0.
        """
        input_ids, mask = (t.to(self.device) for t in left_pad(prompt_ids, self.pad_id))
        positions = left_pad_positions(mask)
        out = self.model(input_ids=input_ids, attention_mask=mask, position_ids=positions,
                         **with_cache(self.model, DynamicCache()), logits_to_keep=1)
        cache = returned_cache(out)
        if samples > 1:
            cache.batch_repeat_interleave(samples)
        logits = out.logits[:, -1].repeat_interleave(samples, dim=0)
        mask = mask.repeat_interleave(samples, dim=0)
        next_position = positions[:, -1:].repeat_interleave(samples, dim=0) + 1
        rows = len(prompt_ids) * samples
        tokens = torch.full((rows, params.max_new_tokens), self.pad_id, dtype=torch.long, device=self.device)
        logprobs = torch.zeros((rows, params.max_new_tokens), device=self.device)
        running = torch.arange(rows, device=self.device)  # batch position -> row
        done = torch.zeros(rows, dtype=torch.bool, device=self.device)  # ended rows still in the batch
        width = 0
        for step in range(params.max_new_tokens):
            token, logprob = sample_next(logits, params.temperature, params.top_p, generator)
            token = token.masked_fill(done, self.pad_id)
            tokens[running, step] = token
            logprobs[running, step] = logprob.masked_fill(done, 0.0)
            width = step + 1
            if step + 1 == params.max_new_tokens:
                break
            done = done | torch.isin(token, self.eos_ids)
            keep = self._rows_to_keep(done)
            if keep is not None:
                if keep.numel() == 0:
                    break
                running, token, mask, next_position, done = (t[keep] for t in (running, token, mask, next_position, done))
                cache.batch_select_indices(keep)
            mask = torch.cat([mask, mask.new_ones((len(running), 1))], dim=1)
            out = self.model(input_ids=token[:, None], attention_mask=mask, position_ids=next_position,
                             **with_cache(self.model, cache))
            logits = out.logits[:, -1]
            next_position = next_position + 1
        return tokens[:, :width].cpu(), logprobs[:, :width].cpu()

    def _decode_generate(self, prompt_ids, samples, params, generator) -> tuple[torch.Tensor, torch.Tensor]:
        """The same through model.generate (seeds the global RNG)."""
        input_ids, mask = left_pad([ids for ids in prompt_ids for _ in range(samples)], self.pad_id)
        return self._generate(input_ids, mask, params)

    def _decode_static(self, prompt_ids, samples, params, generator) -> tuple[torch.Tensor, torch.Tensor]:
        """model.generate with a static KV cache at static_shape(rows, longest prompt): the batch
        is padded with copies of its last row (dropped from the result) and left-padded to the
        bucketed prompt length."""
        rows = [ids for ids in prompt_ids for _ in range(samples)]
        padded_rows, width = static_shape(len(rows), max(len(r) for r in rows))
        input_ids, mask = left_pad(rows + [rows[-1]] * (padded_rows - len(rows)), self.pad_id, width=width)
        start = time.perf_counter()
        tokens, logprobs = self._generate(input_ids, mask, params, cache_implementation="static")
        # the compiled shape: rows x cache length (the padded prompt and every new token)
        self.static_shapes.setdefault((padded_rows, width + params.max_new_tokens), time.perf_counter() - start)
        return tokens[:len(rows)], logprobs[:len(rows)]

    @torch.inference_mode()
    def _generate(self, input_ids, mask, params, **generate_options) -> tuple[torch.Tensor, torch.Tensor]:
        """model.generate over left-padded rows: [B, T] tokens and their log-probs (on the host),
        drawn from this node's sampling distribution (NodeSampling)."""
        if params.seed is not None:
            torch.manual_seed(params.seed)
        input_ids, mask = input_ids.to(self.device), mask.to(self.device)
        sampling = NodeSampling(params.temperature, params.top_p)
        greedy = params.temperature <= 0.0
        with own_generation_config(self.model):
            sequences = self.model.generate(
                input_ids=input_ids, attention_mask=mask, max_new_tokens=params.max_new_tokens,
                do_sample=not greedy, **({} if greedy else {"top_k": 0}),  # 0: generate()'s default top-k of 50 off
                eos_token_id=self.eos_ids.tolist(), pad_token_id=self.pad_id,
                logits_processor=LogitsProcessorList([sampling]), **generate_options,
            )
        tokens = sequences[:, input_ids.shape[1]:]
        return tokens.cpu(), sampling.logprobs(tokens).cpu()

    def _completion(self, tokens: torch.Tensor, logprobs: torch.Tensor, params: SamplingParams) -> Completion:
        return finish_completion(self.tokenizer, self._eos, tokens.tolist(), logprobs.tolist(), params.stop)
