"""The two interfaces between the step loop (loop.py's `StepLoop`, on the trainer's thread) and
the generator working beside it, one each way:

- `GeneratorWorker`: what the step loop asks of the generator (start, publish a step's weights,
  the next batch's size, stop); a thread (loop.py's `GeneratorThread`) or a child process
  (process_loop.py's `GeneratorProcess`) implements it.
- `BatchSink`: what the generator hands the step loop, on the generator's own thread: its waits,
  each scored batch with its `BatchStats`, and the end of generation.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from swarmnode.trainer.experience import ScoredGroup


@dataclass(frozen=True)
class BatchStats:
    """One generated batch: its wall seconds (the slowdown's pause included), completion tokens
    and prompts."""

    seconds: float
    tokens: int
    items: int


class BatchSink(Protocol):
    """Where a GeneratorWorker delivers, called on the worker's thread."""

    def generator_waited(self, seconds: float) -> None:
        """The generator waited `seconds` at the staleness bound."""

    def batch_generated(self, groups: list[ScoredGroup], stats: BatchStats) -> None:
        """A scored batch; an exception raised here ends the worker as failed."""

    def generation_ended(self) -> None:
        """No more batches will come (failed, or the worker's output ended)."""


class GeneratorWorker(Protocol):
    """The generator beside the step loop: it makes batch b only once
    b <= steps published + max_staleness, each with the newest published weights."""

    def start(self, sink: BatchSink) -> None:
        """Begin generating into `sink`."""

    def publish(self) -> None:
        """After a step: the new weights of the trainer the worker was built with, and one more
        step done (admits a batch)."""

    def set_batch_size(self, size: int) -> None:
        """Prompts in each batch from the next one on."""

    def stop(self) -> None:
        """Ask the worker to end (callable from any thread)."""

    def stopping(self) -> bool:
        """Whether stop() was called."""

    def wait_for_stop(self, timeout: float) -> object:
        """Sleep up to `timeout` seconds, woken early by stop()."""

    def raise_if_failed(self) -> None:
        """Raise RuntimeError (from the cause) if the worker failed."""

    def join(self) -> None:
        """Wait for the worker to end after stop() and let go of what it held."""

