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
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from swarmnode.scheduler.plan import OwnSpeed

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


FIT_OBSERVATIONS = 16  # the newest batches and steps the scheduler's cost lines are fitted to


def fit_cost_line(points: Sequence[tuple[float, float]]) -> tuple[float, float] | None:
    """(a, b) with seconds ~ a + b * groups, by least squares over (groups, seconds) points:

        b = sum (x - x_mean)(y - y_mean) / sum (x - x_mean)^2,   a = y_mean - b * x_mean

    When the sizes do not vary (or the fit gives b <= 0 or a < 0, which no real cost has), the
    line through the origin instead: a = 0, b = sum x y / sum x^2. None without a point of
    positive size."""
    points = [(x, y) for x, y in points if x > 0 and y >= 0 and math.isfinite(x) and math.isfinite(y)]
    if not points:
        return None
    n = len(points)
    x_mean = sum(x for x, _ in points) / n
    y_mean = sum(y for _, y in points) / n
    sxx = sum((x - x_mean) ** 2 for x, _ in points)
    if sxx > 0:
        b = sum((x - x_mean) * (y - y_mean) for x, y in points) / sxx
        a = y_mean - b * x_mean
        if b > 0 and a >= 0:
            return a, b
    b = sum(x * y for x, y in points) / sum(x * x for x, _ in points)
    return (0.0, b) if b > 0 else None


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
        self._generate_groups: Throughput | None = None  # work: groups generated and scored
        # (groups, seconds) of the newest batches and steps: the plan's cost lines
        self._generate_points: deque[tuple[float, float]] = deque(maxlen=FIT_OBSERVATIONS)
        self._train_points: deque[tuple[float, float]] = deque(maxlen=FIT_OBSERVATIONS)

    def generated(self, tokens: int, seconds: float, groups: int = 0) -> None:
        """One generated batch: `groups` groups of `tokens` completion tokens in `seconds`
        (slowdown pause included)."""
        with self._lock:
            self._generate = observe(self._generate, tokens, seconds, self.alpha)
            if groups > 0:
                self._generate_groups = observe(self._generate_groups, groups, seconds, self.alpha)
                self._generate_points.append((groups, seconds))

    def trained(self, samples: int, tokens: int, seconds: float, groups: int = 0) -> None:
        """One train step with a gradient: `samples` completions (`groups` groups) taken in, `tokens`
        completion tokens that reached the model (groups with a learning signal), in `seconds`
        (pause included)."""
        with self._lock:
            self._train = observe(self._train, samples, seconds, self.alpha)
            self._train_tokens = observe(self._train_tokens, tokens, seconds, self.alpha)
            if groups > 0:
                self._train_points.append((groups, seconds))

    def own_speed(self) -> OwnSpeed | None:
        """This node's cost lines for the scheduler's plan (fit_cost_line over the newest
        FIT_OBSERVATIONS batches and steps); None until both a batch and a step were timed."""
        with self._lock:
            generate, train = fit_cost_line(self._generate_points), fit_cost_line(self._train_points)
        if generate is None or train is None:
            return None
        return OwnSpeed(generate_s=generate[1], train_s=train[1], generate_fixed_s=generate[0], train_fixed_s=train[0])

    def tokens_per_group(self) -> float | None:
        """Mean completion tokens in one generated group (to turn a peer's claimed tokens/s into groups/s)."""
        with self._lock:
            tokens, groups = self._generate, self._generate_groups
        if tokens is None or groups is None or groups.work <= 0:
            return None
        return tokens.work / groups.work

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


FORGOTTEN_RATE = 1e-3  # groups/s: a peer whose smoothed deliveries fell below this is forgotten


def delivery_rates(previous: Mapping[str, float], counts: Mapping[str, int], seconds: float,
                   alpha: float = EMA_ALPHA, max_peers: int = 1024) -> dict[str, float]:
    """Smoothed groups/s each peer delivered, after an interval of `seconds` in which peer p
    delivered counts[p] groups:

        r'_p = ema(r_p, counts[p] / seconds)     (counts[p] = 0 for a peer that sent nothing)

    A peer falls out once r'_p < FORGOTTEN_RATE, and at most `max_peers` are kept (the fastest):
    the table is bounded whoever sends. An interval that is not a positive finite length
    measures nothing: `previous` is returned."""
    if not (math.isfinite(seconds) and seconds > 0):
        return dict(previous)
    rates = {}
    for peer in set(previous) | set(counts):
        rate = ema(previous.get(peer), max(0, counts.get(peer, 0)) / seconds, alpha)
        if rate >= FORGOTTEN_RATE:
            rates[peer] = rate
    if len(rates) > max_peers:
        rates = dict(sorted(rates.items(), key=lambda kv: kv[1], reverse=True)[:max_peers])
    return rates


class DeliveryMeter:
    """Groups accepted from each verified peer (counted from the intake's worker threads), turned
    into smoothed groups/s by `rates` (called once per plan, on the event loop).

    A node fetches only while its pool is short (rollouts.fetch_ahead_steps), so what arrives is
    what it asked for, not what its peers could send. Gossip says when the pool held enough and
    fetches paused (`pool_held_enough`): peers then delivered everything the node wanted, and
    `saturated` says so for the interval `rates` closed last, which the plan reads as supply
    enough for its configured split. (Dividing the groups by the seconds spent fetching instead
    would count a backlog fetched after a pause as if it had been made in those seconds.)"""

    def __init__(self, max_peers: int = 1024, alpha: float = EMA_ALPHA, clock: Callable[[], float] = time.monotonic,
                 min_interval_s: float = 1.0):
        self.max_peers = max_peers
        # A shorter interval is not closed: one batch over a few milliseconds is no rate.
        self.min_interval_s = min_interval_s
        self.alpha = alpha
        self._clock = clock
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._rates: dict[str, float] = {}
        self._since = clock()
        self._paused = False  # fetches paused at least once in this interval: the pool held enough
        self._saturated = False  # the same, for the interval closed last

    def delivered(self, peer: str, groups: int) -> None:
        with self._lock:
            # Peers already rated are always counted: new identities cannot crowd them out.
            if peer in self._counts or peer in self._rates or len(self._counts) < self.max_peers:
                self._counts[peer] = self._counts.get(peer, 0) + groups

    def pool_held_enough(self) -> None:
        """This node's pool holds enough of its peers' groups: its fetches pause."""
        with self._lock:
            self._paused = True

    @property
    def saturated(self) -> bool:
        """Whether the pool held enough at some point of the interval `rates` closed last."""
        with self._lock:
            return self._saturated

    def rates(self) -> dict[str, float]:
        """Close the interval since the last call (if at least min_interval_s long) and return
        the smoothed rates."""
        with self._lock:
            now = self._clock()
            if now - self._since < self.min_interval_s:
                return dict(self._rates)
            counts, self._counts = self._counts, {}
            self._rates = delivery_rates(self._rates, counts, now - self._since, self.alpha, self.max_peers)
            self._since = now
            self._saturated, self._paused = self._paused, False
            return dict(self._rates)
