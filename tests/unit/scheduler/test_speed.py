"""scheduler/speed.py by hand: this node's measured speed (SpeedMeter, ema, observe, the cost line) and
the observed delivery rates of its peers (DeliveryMeter, delivery_rates)."""
import math
import threading

import pytest

from swarmnode.scheduler import SpeedMeter, Throughput, ema, observe, DeliveryMeter, delivery_rates
from swarmnode.scheduler.speed import fit_cost_line


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


def test_delivery_rates_by_hand():
    # first interval: the rate itself (10 groups in 5 s = 2/s)
    assert delivery_rates({}, {"a": 10}, 5.0) == {"a": 2.0}
    # r' = 0.2 * (4/2) + 0.8 * 2 = 2 for a; b new: 1/s; c silent: 0.8 * 1 = 0.8
    rates = delivery_rates({"a": 2.0, "c": 1.0}, {"a": 4, "b": 2}, 2.0)
    assert rates == pytest.approx({"a": 2.0, "b": 1.0, "c": 0.8})
    assert delivery_rates({"a": 0.001}, {}, 1.0) == {}  # 0.8 * 0.001 < 1e-3: forgotten
    assert delivery_rates({"a": 2.0}, {"a": 5}, 0.0) == {"a": 2.0}  # no time: measures nothing
    assert delivery_rates({"a": 2.0}, {"a": 5}, math.nan) == {"a": 2.0}
    kept = delivery_rates({}, {"slow": 1, "mid": 5, "fast": 9}, 1.0, max_peers=2)
    assert kept == {"fast": 9.0, "mid": 5.0}  # bounded: the fastest are kept


def test_delivery_meter_counts_per_peer_and_stays_bounded():
    now = [0.0]
    meter = DeliveryMeter(max_peers=2, clock=lambda: now[0])
    threads = [threading.Thread(target=lambda: [meter.delivered("a", 1) for _ in range(100)]) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    meter.delivered("b", 10)
    meter.delivered("c", 50)  # a third peer while two are counted: not counted
    now[0] = 10.0
    assert meter.rates() == {"a": 40.0, "b": 1.0}
    now[0] = 20.0
    assert meter.rates() == pytest.approx({"a": 32.0, "b": 0.8})  # nothing new: 0.8 of before
    meter.delivered("b", 1000)
    now[0] = 20.01  # 10 ms: too short to be a rate; the count waits for the next interval
    assert meter.rates() == pytest.approx({"a": 32.0, "b": 0.8})
    for i in range(5):
        meter.delivered(f"new{i}", 1)  # the table is full of new identities ...
    meter.delivered("a", 10)  # ... and a rated peer is still counted
    now[0] = 30.01
    rates = meter.rates()
    assert rates["a"] == pytest.approx(0.2 * 10 / 10.01 + 0.8 * 32.0)


def test_fit_cost_line_by_hand():
    # (1, 0.23), (7, 0.41), (16, 0.68): x_mean = 8, y_mean = 0.44; sxy = (-7)(-0.21) + (-1)(-0.03)
    # + 8(0.24) = 3.42, sxx = 49 + 1 + 64 = 114: b = 0.03, a = 0.44 - 0.24 = 0.2
    a, b = fit_cost_line([(1, 0.23), (7, 0.41), (16, 0.68)])
    assert a == pytest.approx(0.2) and b == pytest.approx(0.03)
    # one size only: through the origin, sum xy / sum x^2 = (8*0.4 + 8*0.6) / 128 = 1/16
    assert fit_cost_line([(8, 0.4), (8, 0.6)]) == (0.0, pytest.approx(1 / 16))
    # a negative intercept (noise) is no cost: through the origin, (2*0.1 + 4*0.5) / 20 = 0.11
    assert fit_cost_line([(2, 0.1), (4, 0.5)]) == (0.0, pytest.approx(0.11))
    assert fit_cost_line([]) is None and fit_cost_line([(0, 1.0), (math.nan, 1.0)]) is None


def test_speed_meter_own_speed_by_hand():
    meter = SpeedMeter(alpha=0.5)
    assert meter.own_speed() is None and meter.tokens_per_group() is None
    meter.generated(640, 2.0, groups=8)
    meter.generated(320, 1.5, groups=4)  # 1.5 = a + 4b, 2 = a + 8b: b = 0.125, a = 1; tokens 480 / 6 = 80 per group
    assert meter.own_speed() is None  # nothing trained yet
    meter.trained(64, 512, 1.0, groups=8)  # one size: 1/8 s a group, no fixed part
    speed = meter.own_speed()
    assert (speed.generate_fixed_s, speed.generate_s) == (pytest.approx(1.0), pytest.approx(0.125))
    assert (speed.train_fixed_s, speed.train_s) == (0.0, pytest.approx(0.125))
    assert meter.tokens_per_group() == pytest.approx(80.0)


def test_a_window_whose_pool_held_enough_is_saturated():
    now = [0.0]
    meter = DeliveryMeter(clock=lambda: now[0])
    assert not meter.saturated  # nothing closed yet
    meter.delivered("a", 20)
    meter.pool_held_enough()  # fetches paused
    now[0] = 10.0
    assert meter.rates() == {"a": 2.0} and meter.saturated  # rates over the whole interval
    meter.delivered("a", 10)  # wanting all through the next interval: not saturated
    now[0] = 20.0
    assert meter.rates() == pytest.approx({"a": 0.2 * 1.0 + 0.8 * 2.0}) and not meter.saturated
    meter.pool_held_enough()
    now[0] = 20.5  # too short to close: the flag waits for the interval that holds it
    meter.rates()
    assert not meter.saturated
    now[0] = 30.0
    meter.rates()
    assert meter.saturated
