"""reasoning-gym datasets as tasks ("rg:<dataset>"), with guarded, hack-resistant scoring."""
from __future__ import annotations

from functools import lru_cache
from typing import Any

from swarmnode.tasks.base import Task, TaskItem

# Cheap, verifiable datasets known to work offline.
SUPPORTED = (
    "chain_sum", "basic_arithmetic", "count_bits", "gcd", "lcm", "products",
    "base_conversion", "letter_counting", "spell_backward", "prime_factorization", "game_of_life_halting",
)


@lru_cache(maxsize=64)
def _dataset(name: str, seed: int, size: int):
    import reasoning_gym

    return reasoning_gym.create_dataset(name, seed=seed, size=size)


def _size_for(index: int) -> int:
    # Items depend on (seed, index) only; a dataset of the next power of two covers `index`
    # while letting nearby indices share one cached dataset object.
    return 1 << max(4, index.bit_length())


class GymTask(Task):
    def __init__(self, dataset: str):
        if dataset not in SUPPORTED:
            raise KeyError(f"reasoning-gym dataset {dataset!r} is not supported; supported: {', '.join(SUPPORTED)}")
        self.dataset = dataset
        self.name = f"rg:{dataset}"

    def entry(self, seed: int, index: int) -> dict[str, Any]:
        return _dataset(self.dataset, seed, _size_for(index))[index]

    def _make(self, seed: int, index: int) -> tuple[str, str]:
        entry = self.entry(seed, index)
        return entry["question"], str(entry["answer"])

    def _score(self, item: TaskItem, answer: str) -> float:
        entry = self.entry(item.ref.seed, item.ref.index)
        if self.dataset == "game_of_life_halting":
            # Its scorer accepts any non-empty string when the truth is False: compare exactly.
            return 1.0 if answer.strip().lower() == str(entry["answer"]).strip().lower() else 0.0
        return _dataset(self.dataset, item.ref.seed, _size_for(item.ref.index)).score_answer(answer=answer, entry=entry)
