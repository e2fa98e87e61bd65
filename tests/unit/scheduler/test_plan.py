"""The scheduler's per-window plan (scheduler/plan.py) on hand-made speed profiles."""
import math
from dataclasses import replace

import pytest

from swarmnode.scheduler import OwnSpeed, PeerSupply, PlanLimits, claimed_groups_per_s, make_plan
from swarmnode.scheduler.plan import (
    choose_external,
    choose_local,
    external_wait,
    step_seconds,
    supply_rate,
    trusted_supply,
)

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


def test_a_pool_that_held_enough_takes_the_whole_split_without_a_wait():
    speed = OwnSpeed(0.2, 0.05)  # step of 8 own groups: 1.6 s
    # The pool filled and fetches paused: what arrived (0.5 groups/s over the window) is what the
    # node asked for, not what peers could send.
    asked = make_plan(speed, peers(0.5), LIMITS)
    filled = make_plan(speed, peers(0.5), LIMITS, saturated=True)
    assert (asked.external_rollouts, filled.external_rollouts) == (1, 8)
    assert filled.external_wait_s == 0.0 and "its pool filled" in filled.reason
    assert choose_external(8, speed, math.inf, LIMITS) == 8


def test_a_peer_that_lies_about_its_speed_plans_like_an_honest_slow_one():
    speed = OwnSpeed(0.2, 0.05)
    liar = make_plan(speed, [PeerSupply("liar", 1e9, 0.5)], LIMITS)
    honest = make_plan(speed, [PeerSupply("honest", 0.5, 0.5)], LIMITS)
    silent = make_plan(speed, [PeerSupply("new", 1e9, None)], LIMITS)
    assert replace(liar, supplies=()) == replace(honest, supplies=())  # only the inputs they were made from differ
    assert liar.supplies == (PeerSupply("liar", 1e9, 0.5),)
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


# -- the node's side: the plan's inputs and its reaching the trainer -------------------------------


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
