"""Fixtures for the `vllm` backend tests (run by scripts/test_vllm.sh in .venv-vllm)."""
from __future__ import annotations

import importlib.util
import os

import pytest

from swarmnode.policy.loading import BUNDLED_TINY, load_policy
from swarmnode.trainer.evaluate import heldout_items

if importlib.util.find_spec("vllm") is not None:
    # The engine in this process: starts in seconds, and load_weights passes tensors by reference.
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")


@pytest.fixture(scope="session")
def policy():
    return load_policy(BUNDLED_TINY)


@pytest.fixture(scope="session")
def questions() -> list[str]:
    return [item.question for item in heldout_items(("sum2", "sum3"), 32)]


@pytest.fixture(scope="session")
def vllm_generator(policy):
    """One engine for the session (tests that change its weights put the original ones back)."""
    from swarmnode.policy.vllm_backend import VLLMGenerator

    generator = VLLMGenerator(BUNDLED_TINY, policy.tokenizer, enforce_eager=True, seed=0)
    yield generator
    generator.close()
