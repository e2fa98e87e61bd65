"""Policies: loading HF causal LMs (bundled, local or hub), prompting them, and generating with them.

- loading.py: load_policy -> LoadedPolicy (model + tokenizer), BUNDLED_TINY, model_fingerprint,
  tokenizer_fingerprint, base_fingerprint (hash of the initial weights)
- tokenizer.py: the bundled policy's byte-level tokenizer (build_byte_tokenizer)
- prompts.py: format_prompt (a question through the chat template), left_pad, left_pad_positions
- generation.py: what every backend shares: SamplingParams, Completion, PromptGeneration, the
  Generator protocol
- sampling.py: top_p_filter, sampling_distribution, sample_next (one token per row from logits)
- attention.py: attention_backends (whether SDPA may use cuDNN's attention)
- kv_cache.py: with_cache, returned_cache (the KV cache by the name the model's forward uses)
- precision.py: use_fp32_logits (the output layer in float32 for a bf16 / fp16 model)
- hf_backend.py: HFGenerator, the `hf` backend (cached decode loop, bucketed or model.generate)
- vllm_backend.py: VLLMGenerator, the optional `vllm` backend (the extra `swarmnode[vllm]`)
"""
from swarmnode.policy.generation import Completion, Generator, PromptGeneration, SamplingParams
from swarmnode.policy.loading import BUNDLED_TINY, LoadedPolicy, PolicyLoadError, load_policy, model_fingerprint

__all__ = [
    "BUNDLED_TINY",
    "Completion",
    "Generator",
    "LoadedPolicy",
    "PolicyLoadError",
    "PromptGeneration",
    "SamplingParams",
    "load_policy",
    "model_fingerprint",
]
