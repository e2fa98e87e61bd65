"""Held-out accuracy: greedy answers to task items the trainer never sees (seed 0)."""
from __future__ import annotations

from collections import defaultdict

from swarmnode.policy.generation import Generator, SamplingParams
from swarmnode.tasks import TaskItem, extract_answer, get_task

HELDOUT_SEED = 0  # training streams use other seeds (RolloutConfig.data_seed)


def heldout_items(tasks: tuple[str, ...], size_per_task: int, seed: int = HELDOUT_SEED) -> list[TaskItem]:
    return [get_task(name).item(seed, index) for name in tasks for index in range(size_per_task)]


def questions_of(items: list[TaskItem]) -> frozenset[tuple[str, str]]:
    """(task, question) pairs, to keep held-out questions out of training streams."""
    return frozenset((i.ref.task, i.question) for i in items)


def accuracy_by_task(items: list[TaskItem], answers: list[str]) -> dict[str, float]:
    """Mean score per task and over all tasks ("mean", the mean of the task means)."""
    scores: dict[str, list[float]] = defaultdict(list)
    for item, text in zip(items, answers, strict=True):
        scores[item.ref.task].append(get_task(item.ref.task).score(item, extract_answer(text)))
    per_task = {task: sum(s) / len(s) for task, s in scores.items()}
    per_task["mean"] = sum(per_task.values()) / len(per_task) if per_task else 0.0
    return per_task


def greedy_accuracy(generator: Generator, items: list[TaskItem], max_new_tokens: int = 8,
                    batch_size: int = 512) -> dict[str, float]:
    params = SamplingParams(temperature=0.0, max_new_tokens=max_new_tokens)
    answers: list[str] = []
    for start in range(0, len(items), batch_size):
        chunk = items[start: start + batch_size]
        answers += [g.completions[0].text for g in generator.generate([i.question for i in chunk], 1, params)]
    return accuracy_by_task(items, answers)
