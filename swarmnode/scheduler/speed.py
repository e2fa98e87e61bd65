"""This node's measured speed: smoothed generation tokens/s, train samples/s and seconds per step.

The figures come from the node's real work (every generated batch, every train step), timed on
wall time *including* any `training.slowdown` pause: they are the effective speed, what the node
actually delivers per second, which is what peers and the scheduler plan with (a node slowed 3x
delivers a third as much per second, whatever its hardware could do). Waiting is not work: the
generator's wait at the staleness bound and the trainer's wait for groups are left out of the
throughputs (they are in `seconds_per_step`, the node's step cadence).

`ema` and `observe` are the math (pure); `SpeedMeter` holds the current estimates for the
generator and trainer threads that feed it and the event loop that publishes them.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass

# Weight of the newest observation. 0.2 halves an old observation's weight every ~3 new ones
# (0.8^3 = 0.51): a node that slows down mid-run shows it within a few steps, while one odd
# batch (a long completion, a checkpoint write) moves the figure by a fifth at most.
EMA_ALPHA = 0.2


def ema(previous: float | None, value: float, alpha: float = EMA_ALPHA) -> float:
    """Exponential moving average of a series x_1, x_2, ...:

        m_1 = x_1,    m_n = alpha * x_n + (1 - alpha) * m_{n-1}    (0 < alpha <= 1)

    The first observation starts the average (`previous` None), so there is no bias toward an
    arbitrary starting value such as 0.
    """
    if not 0 < alpha <= 1:
        raise ValueError(f"alpha must be in (0, 1], got {alpha}")
    return value if previous is None else alpha * value + (1 - alpha) * previous


@dataclass(frozen=True)
class Throughput:
    """Smoothed work per observation (W) and seconds per observation (S); the rate is W / S.

    Work and time are averaged apart (a ratio of EMAs) rather than averaging each observation's
    own rate: W / S = sum_i a_i w_i / sum_i a_i s_i weighs each observation's rate w_i / s_i by
    its duration, so a tiny batch that ran unusually fast cannot count as much as a long one.
    """

    work: float
    seconds: float
    observations: int = 1

    @property
    def per_second(self) -> float:
        return self.work / self.seconds if self.seconds > 0 else 0.0


def observe(previous: Throughput | None, work: float, seconds: float, alpha: float = EMA_ALPHA) -> Throughput | None:
    """`previous` after one observation of `work` units done in `seconds`:
    W' = ema(W, work), S' = ema(S, seconds). An observation that is not finite, has negative
    work or no positive duration measures nothing: `previous` is returned unchanged."""
    if not (math.isfinite(work) and math.isfinite(seconds) and work >= 0 and seconds > 0):
        return previous
    if previous is None:
        return Throughput(work, seconds)
    return Throughput(ema(previous.work, work, alpha), ema(previous.seconds, seconds, alpha), previous.observations + 1)


class SpeedMeter:
    """This node's current estimates, fed from the generator and trainer threads (or the feeder
    thread of a generator process) and read by the event loop: every access holds a lock."""

    def __init__(self, alpha: float = EMA_ALPHA):
        self.alpha = alpha
        self._lock = threading.Lock()
        self._generate: Throughput | None = None  # work: completion tokens sampled
        self._train: Throughput | None = None  # work: completions (samples) trained
        self._train_tokens: Throughput | None = None  # work: completion tokens trained
        self._step_seconds: float | None = None

    def generated(self, tokens: int, seconds: float) -> None:
        """One generated batch: `tokens` completion tokens in `seconds` (slowdown pause included)."""
        with self._lock:
            self._generate = observe(self._generate, tokens, seconds, self.alpha)

    def trained(self, samples: int, tokens: int, seconds: float) -> None:
        """One train step with a gradient: `samples` completions taken in, `tokens` completion tokens
        that reached the model (groups with a learning signal), in `seconds` (pause included)."""
        with self._lock:
            self._train = observe(self._train, samples, seconds, self.alpha)
            self._train_tokens = observe(self._train_tokens, tokens, seconds, self.alpha)

    def stepped(self, seconds: float) -> None:
        """Wall time from the end of the previous step to the end of this one (the step cadence)."""
        if math.isfinite(seconds) and seconds > 0:
            with self._lock:
                self._step_seconds = ema(self._step_seconds, seconds, self.alpha)

    def snapshot(self) -> dict[str, float | None]:
        """The current figures; None until the work they measure has happened once."""
        with self._lock:
            generate, train, tokens, step = self._generate, self._train, self._train_tokens, self._step_seconds
        return {
            "generate_tokens_per_s": None if generate is None else generate.per_second,
            "train_samples_per_s": None if train is None else train.per_second,
            "train_tokens_per_s": None if tokens is None else tokens.per_second,
            "seconds_per_step": step,
        }
