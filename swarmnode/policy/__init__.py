"""Policies: loading HF causal LMs (bundled, local or hub), tokenizers, generation backends."""
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
