"""Small procedural tasks with compact prompts that a ~1M-parameter policy can learn."""
from __future__ import annotations

import random

from swarmnode.tasks.base import Task, TaskItem


def _rng(name: str, seed: int, index: int) -> random.Random:
    # A string seed hashes deterministically (sha512) across processes and Python versions.
    return random.Random(f"swarmnode/{name}/{seed}/{index}")


class SumTask(Task):
    """"23+7+41=" -> "71": `terms` numbers of 1..`max_digits` digits."""

    def __init__(self, name: str, terms: int, max_digits: int):
        self.name = name
        self.terms = terms
        self.max_digits = max_digits

    def operands(self, seed: int, index: int) -> list[int]:
        rng = _rng(self.name, seed, index)
        return [rng.randrange(10 ** rng.randint(1, self.max_digits)) for _ in range(self.terms)]

    def _make(self, seed: int, index: int) -> tuple[str, str]:
        numbers = self.operands(seed, index)
        return "+".join(map(str, numbers)) + "=", str(sum(numbers))

    def _score(self, item: TaskItem, answer: str) -> float:
        return 1.0 if answer.strip() == item.answer else 0.0


BUILTIN_TASKS: dict[str, Task] = {
    task.name: task
    for task in (
        SumTask("sum2", terms=2, max_digits=2),
        SumTask("sum3", terms=3, max_digits=2),
    )
}
