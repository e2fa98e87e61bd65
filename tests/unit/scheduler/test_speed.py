"""This node's measured speed (scheduler.speed) and training.slowdown's pause (trainer.loop), by hand."""
import math
import threading
import time

import pytest

from swarmnode.scheduler import SpeedMeter, Throughput, ema, observe
from swarmnode.trainer.loop import AsyncRunner, RolloutConfig, slowdown_pause_s


def test_ema_by_hand():
    # m_1 = x_1; m_n = 0.2 x_n + 0.8 m_{n-1}
    assert ema(None, 10.0) == 10.0
    assert ema(10.0, 20.0) == pytest.approx(12.0)  # 0.2 * 20 + 0.8 * 10
    assert ema(12.0, 20.0) == pytest.approx(13.6)  # 0.2 * 20 + 0.8 * 12
    assert ema(4.0, 8.0, alpha=0.5) == 6.0
    assert ema(4.0, 8.0, alpha=1.0) == 8.0  # alpha 1: only the newest counts
    for alpha in (0.0, -0.1, 1.5):
        with pytest.raises(ValueError):
            ema(1.0, 2.0, alpha=alpha)


def test_observe_averages_work_and_time_apart_by_hand():
    first = observe(None, 100, 2.0)
    assert first == Throughput(100, 2.0, 1) and first.per_second == 50.0
    second = observe(first, 300, 2.0, alpha=0.5)  # W = 0.5*300 + 0.5*100 = 200, S = 2
    assert (second.work, second.seconds, second.observations) == (200, 2.0, 2) and second.per_second == 100.0
    # A tiny batch that ran 10x faster moves the rate by its share of the time, not by half:
    # W = 0.5*10 + 0.5*100 = 55, S = 0.5*0.01 + 0.5*1 = 0.505 -> 108.9/s (an EMA of the rates 100
    # and 1000 would say 550/s).
    short = observe(Throughput(100, 1.0), 10, 0.01, alpha=0.5)
    assert short.per_second == pytest.approx(55 / 0.505)


def test_observe_ignores_what_measures_nothing():
    base = Throughput(100, 2.0)
    for work, seconds in ((10, 0.0), (10, -1.0), (-5, 1.0), (math.nan, 1.0), (10, math.inf), (math.inf, 1.0)):
        assert observe(base, work, seconds) is base
    assert observe(None, 10, 0.0) is None
    assert Throughput(5, 0.0).per_second == 0.0


def test_speed_meter_by_hand():
    meter = SpeedMeter(alpha=0.5)
    assert meter.snapshot() == {"generate_tokens_per_s": None, "train_samples_per_s": None,
                                "train_tokens_per_s": None, "seconds_per_step": None}
    meter.generated(400, 2.0)
    meter.generated(200, 2.0)  # W = 300, S = 2 -> 150 tokens/s
    meter.trained(32, 256, 4.0)
    meter.trained(32, 128, 12.0)  # samples: W = 32, S = 8 -> 4/s; tokens: W = 192 -> 24/s
    meter.stepped(2.0)
    meter.stepped(6.0)  # 0.5*6 + 0.5*2 = 4
    meter.stepped(0.0)  # no time: measures nothing
    assert meter.snapshot() == {"generate_tokens_per_s": 150.0, "train_samples_per_s": 4.0,
                                "train_tokens_per_s": 24.0, "seconds_per_step": 4.0}


def test_slowdown_pause_by_hand():
    assert slowdown_pause_s(0.5, 3.0) == 1.0  # 0.5 s of work + 1 s of pause = 3 x 0.5 s
    assert slowdown_pause_s(2.0, 1.5) == 1.0
    assert slowdown_pause_s(0.5, 1.0) == 0.0
    for compute in (0.0, -1.0, math.nan, math.inf):
        assert slowdown_pause_s(compute, 4.0) == 0.0


def test_a_runners_pause_lasts_and_a_stop_ends_it():
    runner = AsyncRunner(None, None, iter(()), RolloutConfig(), slowdown=3.0)
    start = time.perf_counter()
    slept = runner._pause(0.05)
    assert slept >= 0.099 and time.perf_counter() - start >= 0.099  # (3 - 1) x 0.05 s
    assert AsyncRunner(None, None, iter(()), RolloutConfig())._pause(10.0) == 0.0  # slowdown 1: none
    long = AsyncRunner(None, None, iter(()), RolloutConfig(), slowdown=1000.0)
    threading.Timer(0.1, long.stop).start()
    start = time.perf_counter()
    long._pause(1.0)  # would pause 999 s: shutdown must not wait for it
    assert time.perf_counter() - start < 30


def test_the_process_runners_trainer_pause_lasts_and_a_stop_ends_it():
    from swarmnode.trainer.process_loop import ProcessAsyncRunner

    class FakeTrainer:
        version = 0

    runner = ProcessAsyncRunner("unused", FakeTrainer(), RolloutConfig(), slowdown=2.0)
    assert runner._pause(0.05) >= 0.049
    slow = ProcessAsyncRunner("unused", FakeTrainer(), RolloutConfig(), slowdown=1000.0)
    threading.Timer(0.1, slow.stop).start()
    start = time.perf_counter()
    slow._pause(1.0)
    assert time.perf_counter() - start < 30
