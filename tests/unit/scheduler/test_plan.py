"""The scheduler's per-window plan (scheduler/plan.py) on hand-made speed profiles, the observed
delivery rates it trusts (scheduler/speed.py), and the plan reaching a runner's quotas."""
import math
import threading

import pytest

from swarmnode.scheduler import (
    DeliveryMeter,
    OwnSpeed,
    PeerSupply,
    PlanLimits,
    SpeedMeter,
    claimed_groups_per_s,
    delivery_rates,
    make_plan,
)
from swarmnode.scheduler.speed import fit_cost_line
from swarmnode.scheduler.plan import choose_external, choose_local, external_wait, step_seconds, supply_rate, trusted_supply

# A 10 s window, I0 = J0 = 8, Q in [2, 8], a batch in at most half a window, a wait of at most a
# quarter of a step.
LIMITS = PlanLimits(window_s=10.0, local_rollouts=8, external_rollouts=8, min_steps_per_window=2, max_steps_per_window=8)


def peers(*rates):
    return [PeerSupply(f"p{i}", None, r) for i, r in enumerate(rates)]


def test_trusted_supply_is_the_lower_of_claim_and_deliveries():
    assert trusted_supply(100.0, 2.0) == 2.0  # a claim is never trusted beyond the deliveries
    assert trusted_supply(1.0, 2.0) == 1.0  # a peer that says it slowed down is believed at once
    assert trusted_supply(None, 2.0) == 2.0  # no claim: the deliveries
    assert trusted_supply(100.0, None) == 0.0  # nothing seen, nothing expected
    for bad in (math.nan, math.inf, -1.0, 0.0):
        assert trusted_supply(5.0, bad) == 0.0
    assert trusted_supply(math.nan, 2.0) == 2.0  # a claim that is not a number limits nothing
    assert supply_rate([PeerSupply("a", 10.0, 1.5), PeerSupply("b", 0.5, 3.0), PeerSupply("c", 9.0, None)]) == 2.0


def test_step_seconds_is_the_slower_of_generation_and_training():
    speed = OwnSpeed(generate_s=0.1, train_s=0.05)
    assert step_seconds(8, 0, speed) == pytest.approx(0.8)  # 8 * 0.1 vs 8 * 0.05
    assert step_seconds(8, 16, speed) == pytest.approx(1.2)  # 24 * 0.05 > 0.8


def test_when_the_window_allows_no_batch_size_less_work_wins():
    # publish_share 0.05 < 1 / Q_max: I_high = floor(0.05 * 10 / 0.1) = 5, I_low = ceil(1.25 / 0.1) = 13
    limits = PlanLimits(window_s=10.0, local_rollouts=8, external_rollouts=8, publish_share=0.05)
    assert choose_local(OwnSpeed(0.1, 0.01), limits) == (5, "slow: fewer so >= 2 steps fit a window")


def test_a_node_that_fits_keeps_its_configured_batch():
    # g = 0.4: I_high = floor(min(0.5*10/0.4, 10/(2*0.4))) = 12, I_low = ceil(10/(8*0.4)) = 4 -> 8
    assert choose_local(OwnSpeed(0.4, 0.2), LIMITS) == (8, "configured")


def test_a_1x_2x_4x_100x_swarm_by_hand():
    supply = peers(2.0, 1.0, 0.5)  # A = 3.5 groups/s
    # 1x, g = 0.1, t = 0.05: I_low = ceil(min(1.25/0.1, 0.5*1.25/0.05)) = 13 > 8 -> 13 (fast: at
    # most 8 steps a window); F = max(B - I, 13 * 8 // 8) = 13, a step of 13 + 13: max(1.3, 1.3)
    # J = min(13, ceil(3.5 * 1.3) = 5, floor(5/0.05) - 13 = 87) = 5
    # step = max(1.3, 18*0.05) = 1.3; wait = min(5/3.5, 0.25*1.3) = 0.325; Q = 10/1.625 = 6.15
    fast = make_plan(OwnSpeed(0.1, 0.05), supply, LIMITS)
    assert (fast.local_rollouts, fast.external_rollouts, fast.external_wait_s, fast.steps_per_window) == (13, 5, 0.325, 6.15)
    assert fast.reason.startswith("fast")
    # 2x, g = 0.2, t = 0.1: I in [ceil(6.25) = 7, floor(25) = 25] -> 8
    # J = min(8, ceil(3.5 * max(1.6, 1.6)) = 6, 50 - 8) = 6
    # step = max(1.6, 14*0.1) = 1.6; wait = min(6/3.5, 0.4) = 0.4; Q = 10/2 = 5
    mid = make_plan(OwnSpeed(0.2, 0.1), supply, LIMITS)
    assert (mid.local_rollouts, mid.external_rollouts, mid.external_wait_s, mid.steps_per_window) == (8, 6, 0.4, 5.0)
    # 4x, g = 0.4, t = 0.2: I = 8 (above); J = min(8, ceil(3.5*3.2) = 12, floor(5/0.2) - 8 = 17) = 8
    # step = max(3.2, 16*0.2) = 3.2; wait = min(8/3.5, 0.8) = 0.8; Q = 10/4 = 2.5
    slow = make_plan(OwnSpeed(0.4, 0.2), supply, LIMITS)
    assert (slow.local_rollouts, slow.external_rollouts, slow.external_wait_s, slow.steps_per_window) == (8, 8, 0.8, 2.5)
    # 100x, g = 10, t = 5: I_high = floor(min(0.5, 0.5)) = 0 -> the smallest batch, 1; no time
    # to train a peer's group: J = floor(10/(2*5)) - 1 = 0; Q = 10/10 = 1 (below Q_min: it says so)
    crawl = make_plan(OwnSpeed(10.0, 5.0), supply, LIMITS)
    assert (crawl.local_rollouts, crawl.external_rollouts, crawl.external_wait_s, crawl.steps_per_window) == (1, 0, 0.0, 1.0)
    assert crawl.reason.startswith("slower than the window")


def test_a_slow_node_gets_less_work_not_a_longer_window():
    # Q_min = 5: g = 0.4 fits floor(10 / (5 * 0.4)) = 5 own groups a step; the batch is refilled
    # with peers' groups only as far as training leaves 5 steps: floor(10 / (5 * 0.2)) - 5 = 5.
    limits = PlanLimits(window_s=10.0, local_rollouts=8, external_rollouts=8, min_steps_per_window=5, max_steps_per_window=20)
    plan = make_plan(OwnSpeed(0.4, 0.2), peers(10.0), limits)
    assert (plan.local_rollouts, plan.external_rollouts) == (5, 5)
    assert plan.reason.startswith("slow")
    # step = max(2.0, 10*0.2) = 2; wait = min(5/10, 0.5) = 0.5; Q = 10/2.5 = 4
    assert plan.steps_per_window == 4.0


def test_a_node_that_slows_down_mid_run_gets_a_smaller_batch():
    limits = PlanLimits(window_s=10.0, local_rollouts=8, external_rollouts=8, min_steps_per_window=5, max_steps_per_window=20)
    before = make_plan(OwnSpeed(0.1, 0.05), peers(4.0), limits)
    after = make_plan(OwnSpeed(0.8, 0.4), peers(4.0), limits)  # 8x slower: floor(10 / (5*0.8)) = 2
    assert before.local_rollouts == 8 and after.local_rollouts == 2
    assert after.steps_per_window >= 1.0


def test_peers_groups_are_taken_only_as_fast_as_they_arrive():
    speed = OwnSpeed(0.2, 0.05)  # step of 8 own groups: 1.6 s
    assert choose_external(8, speed, 0.0, LIMITS) == 0  # nobody delivers: no peers' groups, no wait
    assert choose_external(8, speed, 2.0, LIMITS) == 4  # ceil(2 * 1.6)
    assert choose_external(8, speed, 0.1, LIMITS) == 1  # one every few steps: still taken
    assert choose_external(8, speed, 100.0, LIMITS) == 8  # no more than refill the batch to I0 + J0
    no_peers = PlanLimits(window_s=10.0, local_rollouts=8, external_rollouts=0)
    assert choose_external(8, speed, 100.0, no_peers) == 0  # J0 = 0: this node takes no peers' groups
    assert external_wait(0, 1.6, 2.0, LIMITS) == 0.0
    assert external_wait(3, 1.6, 2.0, LIMITS) == pytest.approx(0.4)  # min(1.5, 0.25 * 1.6)
    assert external_wait(2, 10.0, 4.0, LIMITS) == pytest.approx(0.5)  # min(2/4, 2.5)


def test_a_peer_that_lies_about_its_speed_plans_like_an_honest_slow_one():
    speed = OwnSpeed(0.2, 0.05)
    liar = make_plan(speed, [PeerSupply("liar", 1e9, 0.5)], LIMITS)
    honest = make_plan(speed, [PeerSupply("honest", 0.5, 0.5)], LIMITS)
    silent = make_plan(speed, [PeerSupply("new", 1e9, None)], LIMITS)
    assert liar == honest
    assert silent.external_rollouts == 0  # a claim alone brings nothing


def test_nothing_measured_keeps_the_configured_quotas():
    limits = PlanLimits(window_s=10.0, local_rollouts=8, external_rollouts=4, fixed_wait_s=2.0)
    for speed in (None, OwnSpeed(0.0, 0.1), OwnSpeed(math.nan, 0.1), OwnSpeed(0.1, math.inf)):
        plan = make_plan(speed, peers(5.0), limits)
        assert (plan.local_rollouts, plan.external_rollouts, plan.external_wait_s, plan.steps_per_window) == (8, 4, 2.0, None)
        assert plan.reason.startswith("measuring")


def test_plan_limits_refuse_impossible_ranges():
    with pytest.raises(ValueError):
        PlanLimits(window_s=0.0, local_rollouts=8, external_rollouts=0)
    with pytest.raises(ValueError):
        PlanLimits(window_s=10.0, local_rollouts=8, external_rollouts=0, min_local=4, max_local=2)
    with pytest.raises(ValueError):
        PlanLimits(window_s=10.0, local_rollouts=8, external_rollouts=0, min_steps_per_window=9, max_steps_per_window=8)


def test_claimed_groups_per_s_by_hand():
    assert claimed_groups_per_s(640.0, 64.0) == 10.0
    for tokens, per_group in ((0.0, 64.0), (640.0, None), (None, 64.0), (math.inf, 64.0), (640.0, 0.0), (-1.0, 64.0)):
        assert claimed_groups_per_s(tokens, per_group) is None


# -- observed deliveries -----------------------------------------------------------------------


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


# -- the node's side: the plan's inputs and its reaching the trainer -------------------------------


def test_current_plan_follows_the_measurements(tmp_path):
    from swarmnode.config import NodeConfig
    from swarmnode.node.scheduling import current_plan
    from swarmnode.node.training import TrainingService

    config = NodeConfig.model_validate({
        "swarm": {"window_s": 10},
        "training": {"local_rollouts": 8, "external_rollouts": 8, "external_wait_s": 2},
        "scheduler": {"enabled": True, "min_steps_per_window": 5, "max_steps_per_window": 20},
    })
    training = TrainingService(config, tmp_path)
    now = [0.0]
    training.deliveries = DeliveryMeter(clock=lambda: now[0])
    try:
        plan = current_plan(config, training, [])
        assert (plan.local_rollouts, plan.external_rollouts, plan.external_wait_s) == (8, 8, 2.0)  # nothing measured
        training.speed.generated(640, 0.8, groups=8)  # 0.1 s per group
        training.speed.trained(64, 512, 0.4, groups=8)  # 0.05 s per group
        assert current_plan(config, training, []).local_rollouts == 8
        for _ in range(16):  # the node slows down: the newest 16 batches are all that the fit sees
            training.speed.generated(640, 6.4, groups=8)  # 0.8 s per group: floor(10 / (5 * 0.8)) = 2
        plan = current_plan(config, training, [])
        assert plan.local_rollouts == 2 and plan.external_rollouts == 0  # no peer has delivered anything
        training.deliveries.delivered("peer", 40)
        now[0] = 10.0  # 40 groups in 10 s: 4/s; a step of 2 + 14 groups: max(1.6, 0.8) s; ceil(4 * 1.6) = 7
        plan = current_plan(config, training, [])
        assert plan.external_rollouts == 7  # a peer that delivers: its groups fill the batch
        training.apply_plan(plan)
        assert training.snapshot()["plan"]["local_rollouts"] == 2
        off = NodeConfig.model_validate({**config.model_dump(), "scheduler": {"enabled": False}})
        assert current_plan(off, training, []).reason == "scheduler off: fixed quotas"
    finally:
        training.metrics.close()


def test_a_fast_node_stays_under_q_max_when_peers_deliver_less_than_the_split():
    # g = 0.01, t = 0.05 (training sets the pace), A = 1 group/s, W = 10, Q_max = 8: T' = 1.25.
    # choose_local: I_low = ceil(min(125, 0.5 * 1.25 / 0.05)) = 13, assuming 13 peers' groups too;
    # J = min(13, ceil(1 * max(0.13, 26 * 0.05)) = 2, 100 - 13) = 2: a step of 15 groups, 0.75 s,
    # wait min(2, 0.1875): 10 / 0.9375 = 10.7 steps a window, over Q_max. So I rises:
    # I' = ceil(min(125, 1.25 / 0.05 - 2)) = 23; J = min(23, ceil(1 * 2.3) = 3, 77) = 3;
    # step = max(0.23, 26 * 0.05) = 1.3, wait = min(3, 0.325) = 0.325: Q = 10 / 1.625 = 6.15.
    plan = make_plan(OwnSpeed(0.01, 0.05), peers(1.0), LIMITS)
    assert (plan.local_rollouts, plan.external_rollouts, plan.external_wait_s, plan.steps_per_window) == (23, 3, 0.325, 6.15)
    assert plan.reason.startswith("fast: more so <= 8 steps")


def test_a_larger_batch_keeps_the_configured_split():
    speed = OwnSpeed(0.01, 0.005)  # I_low = ceil(10 / (8 * 0.01)) = 125 -> max_local 32
    plan = make_plan(speed, peers(1000.0), LIMITS)
    # J = min(max(16 - 32, 32 * 8 // 8), floor(1000 * 0.32), floor(10 / 0.01) - 32) = 32
    assert (plan.local_rollouts, plan.external_rollouts) == (32, 32)
    assert plan.reason.startswith("fast: capped")


def test_when_training_sets_the_pace_both_own_and_peers_groups_shrink():
    # Measured on this machine at 4x: g = 0.042, t = 0.044 (a step trains I + J groups, so
    # training is the slower half). W = 10, Q_min = 24: a step may train floor(10 / (24 * 0.044))
    # = 9 groups; own groups get I0 / B = half: floor(4.73) = 4, peers' the rest: 9 - 4 = 5.
    limits = PlanLimits(window_s=10.0, local_rollouts=8, external_rollouts=8, min_steps_per_window=24, max_steps_per_window=100)
    plan = make_plan(OwnSpeed(0.042, 0.044), peers(100.0), limits)
    assert (plan.local_rollouts, plan.external_rollouts) == (4, 5)
    # step = max(4 * 0.042, 9 * 0.044) = 0.396; wait = min(5/100, 0.099) = 0.05; Q = 10 / 0.446
    # (I_low = ceil(min(0.1/0.042, 0.5 * 0.1/0.044)) = 2 with Q_max = 100)
    assert plan.steps_per_window == pytest.approx(10 / 0.446, abs=0.01)
    # The 1x node of the same swarm (g = 0.0093, t = 0.0083) keeps its configured 8 + 8.
    fast = make_plan(OwnSpeed(0.0093, 0.0083), peers(100.0), limits)
    assert (fast.local_rollouts, fast.external_rollouts) == (8, 8)


def test_a_fixed_cost_per_step_keeps_a_slow_node_off_the_smallest_batch():
    # A step costs a_t = 0.2 s plus t = 0.03 s a group (optimizer and weight hand-over: the same
    # for 1 group as for 16). T = 10 / 16 = 0.625 s: (0.625 - 0.2) / 0.03 = 14 groups a step,
    # own half: floor(7.08) = 7; generation: (0.625 - 0.05) / 0.02 = 28.75 is not the limit.
    limits = PlanLimits(window_s=10.0, local_rollouts=8, external_rollouts=8, min_steps_per_window=16, max_steps_per_window=64)
    speed = OwnSpeed(generate_s=0.02, train_s=0.03, generate_fixed_s=0.05, train_fixed_s=0.2)
    plan = make_plan(speed, peers(100.0), limits)
    assert (plan.local_rollouts, plan.external_rollouts) == (7, 7)  # J = 14 - 7
    # Read as seconds per group of a 16-group step, (0.2 + 16 * 0.03) / 16 = 0.0425, the same
    # node would plan floor(0.5 * 0.625 / 0.0425) = 7 too, but at 7 groups that figure becomes
    # (0.2 + 7 * 0.03) / 7 = 0.0586 and the next plan floor(5.3) = 5, then 4, ...: the spiral
    # that drove a real slow node to 1 group a step.
    spiral = make_plan(OwnSpeed(0.02, (0.2 + 7 * 0.03) / 7), peers(100.0), limits)
    assert spiral.local_rollouts < plan.local_rollouts
    # A fixed cost larger than a whole step leaves the smallest batch and no peers' groups.
    crawl = make_plan(OwnSpeed(0.02, 0.03, 0.05, 1.0), peers(100.0), limits)
    assert (crawl.local_rollouts, crawl.external_rollouts) == (1, 0)


def test_status_view_shows_the_plan_and_idle_shares_in_80_columns():
    from rich.console import Console

    from swarmnode.cli.render import status_view
    from tests.unit.status.test_summaries_status import status

    plan = {"local_rollouts": 3, "external_rollouts": 3, "external_wait_s": 0.017, "steps_per_window": 23.61,
            "reason": "slow: fewer so >= 24 steps fit a window; s = a + b x groups: generate 0 + 0.088, "
                      "train 0 + 0.068; peers supply 180 groups/s"}
    training = {"model": "bundled:tiny-policy", "plan": plan, "generator_idle_share": 0.285, "trainer_idle_share": 0.0153,
                "staleness_local": {"0": 95, "1": 1029}, "staleness_external": {"0": 42, "1": 446, "2": 300}}
    console = Console(width=80, record=True, color_system=None)
    console.print(status_view(status(training=training)))
    text = console.export_text()
    assert all(len(line) <= 80 for line in text.splitlines())
    flat = " ".join(text.split())
    assert "I/J 3/3, wait 0.017 s, 23.61 steps/window" in flat and "peers supply 180 groups/s" in flat
    assert "trainer idle share 0.0153" in flat and "staleness external {'0': 42, '1': 446, '2': 300}" in flat
