"""What a task is: items regenerable from (task, seed, index), and a guarded scorer."""
from __future__ import annotations

import abc
import logging
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TaskRef:
    """Names one task item; anyone can regenerate the item from it."""

    task: str
    seed: int
    index: int


@dataclass(frozen=True)
class TaskItem:
    ref: TaskRef
    question: str  # the prompt text, before any chat template (text is the swarm's currency)
    answer: str  # the reference answer (a scorer may accept other forms)


class Task(abc.ABC):
    """A source of verifiable items. Subclasses implement `_make` and `_score`."""

    name: str

    def item(self, seed: int, index: int) -> TaskItem:
        if seed < 0 or index < 0:
            raise ValueError("seed and index are non-negative")
        question, answer = self._make(seed, index)
        return TaskItem(TaskRef(self.name, seed, index), question, answer)

    def score(self, item: TaskItem, answer: str | None) -> float:
        """Reward in [0, 1] for an extracted answer. Never raises: a scorer error scores 0."""
        if answer is None:
            return 0.0
        try:
            reward = float(self._score(item, answer))
        except Exception:  # noqa: BLE001 - third-party scorers raise on odd answers (e.g. non-numeric)
            log.debug("scorer of %s raised on %r", self.name, answer[:80], exc_info=True)
            return 0.0
        return min(1.0, max(0.0, reward)) if reward == reward else 0.0  # NaN scores 0

    @abc.abstractmethod
    def _make(self, seed: int, index: int) -> tuple[str, str]: ...

    @abc.abstractmethod
    def _score(self, item: TaskItem, answer: str) -> float: ...
