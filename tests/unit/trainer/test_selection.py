"""trainer/selection.py: the external-group selection policies by hand, and the buffer selecting where
this node is weak."""
import random

import pytest

from swarmnode.tasks import TaskRef
from swarmnode.trainer.buffer import ExperienceBuffer
from swarmnode.trainer.selection import (
    POLICIES,
    balanced_weights,
    draws_only_informative,
    drawable,
    fresh_quality_weights,
    need,
    own_need_weights,
    select_external,
    update_success,
    weighted_sample,
)
from tests.unit.trainer.helpers import group


def test_balanced_weights_give_every_sender_one_share_by_hand():
    groups = [
        group(version=7, source="fast"),  # fast has 3 informative groups here: 1/3 each at tau 0
        group(version=7, source="fast"),
        group(version=7, source="fast"),
        group(version=7, source="fast", rewards=(1.0, 1.0)),  # no spread: 0, and not counted in n
        group(version=6, source="slow"),  # slow's only group, tau 1: (1/2) / 1
    ]
    weights = balanced_weights(groups, version=7)
    assert weights == pytest.approx([1 / 3, 1 / 3, 1 / 3, 0.0, 0.5])
    # With 10,000 draws of one group, slow's single group is picked about as often as all of
    # fast's together (0.5 vs 1.0 of mass): per group produced, 3 times as often.
    rng = random.Random(0)
    picks = [select_external(groups, 1, "balanced", 7, {}, rng)[0] for _ in range(10_000)]
    share_slow = picks.count(4) / len(picks)
    assert share_slow == pytest.approx(1 / 3, abs=0.02)
    assert 3 not in picks


def test_fresh_quality_weights_by_hand():
    groups = [
        group(version=5, source="A", rewards=(1.0, 0.0)),  # tau 2, q 0.9: 1/3 * 0.9 = 0.3
        group(version=7, source="B", rewards=(1.0, 1.0)),  # spread 0: weight 0 whatever else
        group(version=7, source="C", rewards=(0.0, 0.5)),  # unknown sender: q 0.5, fresh -> 0.5
        group(version=9, source="A", rewards=(0.0, 1.0)),  # ahead of the node: tau 0 -> 0.9
        group(version=4, source="D", rewards=(0.0, 1.0)),  # tau 3, q 0.2: 0.25 * 0.2 = 0.05
    ]
    quality = {"A": 0.9, "B": 1.0, "D": 0.2}
    assert fresh_quality_weights(groups, 7, quality) == pytest.approx([0.3, 0.0, 0.5, 0.9, 0.05])
    # alpha = 2: (1 + tau)^-2
    assert fresh_quality_weights(groups, 7, quality, alpha=2.0) == pytest.approx([0.1, 0.0, 0.5, 0.9, 0.2 / 16])
    assert fresh_quality_weights([], 7, quality) == []


def test_own_success_and_need_by_hand():
    assert update_success(None, 1.0) == pytest.approx(0.9 * 0.5 + 0.1 * 1.0)  # from the 0.5 prior: 0.55
    assert update_success(0.2, 0.0) == pytest.approx(0.18)
    assert update_success(0.2, 0.75, decay=0.5) == pytest.approx(0.475)
    assert need(None) == 0.5 and need(0.3) == pytest.approx(0.7) and need(1.0) == 0.05  # the floor


def test_own_need_weights_by_hand():
    weak, strong = TaskRef("sum3", 0, 0), TaskRef("sum2", 0, 0)
    groups = [
        group(version=5, source="A", rewards=(1.0, 0.0)),  # sum2, tau 2, q 0.9: 0.3 * need 0.2 = 0.06
        group(version=7, source="C", rewards=(0.0, 1.0)),  # sum3, fresh, q 0.5: 0.5 * need 0.9 = 0.45
        group(version=7, source="A", rewards=(0.0, 0.0)),  # sum3 but all wrong: 0
        group(version=7, source="A", rewards=(0.0, 1.0)),  # rg:count_bits, never seen: 0.9 * need 0.5 = 0.45
    ]
    groups[0].ref, groups[1].ref, groups[2].ref, groups[3].ref = strong, weak, weak, TaskRef("rg:count_bits", 0, 0)
    success = {"sum2": 0.8, "sum3": 0.1}
    assert own_need_weights(groups, 7, {"A": 0.9}, success) == pytest.approx([0.06, 0.45, 0.0, 0.45])
    rng = random.Random(0)
    picks = [select_external(groups, 1, "own_need", 7, {"A": 0.9}, rng, success)[0] for _ in range(2000)]
    share = picks.count(1) / len(picks)  # P = 0.45 / 0.96
    assert abs(share - 0.45 / 0.96) < 0.04 and 2 not in picks


def test_the_buffer_tracks_its_own_success_per_task_and_selects_where_it_is_weak():
    buf = ExperienceBuffer(max_staleness=4, external_max_staleness=4, selection="own_need", seed=1)
    weak, strong = TaskRef("sum3", 0, 0), TaskRef("sum2", 0, 0)
    own = []
    for ref, rewards in ((strong, (1.0, 1.0)), (weak, (0.0, 0.0))) * 30:
        g = group(rewards=rewards)
        g.ref = ref
        own.append(g)
    buf.put(own)
    assert buf.own_success["sum2"] > 0.95 and buf.own_success["sum3"] < 0.05
    peers = []
    for i in range(40):
        g = group(source=f"p{i}", rewards=(1.0, 0.0))
        g.ref = weak if i % 2 else strong
        peers.append(g)
    buf.put(peers)
    taken = buf.take(0, 10, version=0).groups
    assert sum(g.ref == weak for g in taken) >= 8  # need 0.95+ against the floor 0.05
    assert buf.stats.external_taken_by_task["sum3"] == sum(g.ref == weak for g in taken)
    assert buf.stats.external_taken_by_task["sum2"] == sum(g.ref == strong for g in taken)
    assert buf.own_success_snapshot() == buf.own_success


def test_weighted_sample_puts_zero_weights_last():
    rng = random.Random(3)
    for _ in range(50):
        order = weighted_sample([0.0, 2.0, 0.0, 1.0], 4, rng)
        assert sorted(order) == [0, 1, 2, 3]
        assert set(order[:2]) == {1, 3}


def test_uniform_returns_min_k_n_distinct_indices():
    groups = [group(source=f"p{i}", rewards=(1.0, 1.0)) for i in range(5)]  # spread does not matter
    for seed in range(30):
        rng = random.Random(seed)
        picked = select_external(groups, 3, "uniform", 0, {}, rng)
        assert len(picked) == 3 and len(set(picked)) == 3 and set(picked) <= set(range(5))
        everything = select_external(groups, 10, "uniform", 0, {}, rng)
        assert sorted(everything) == [0, 1, 2, 3, 4]
    assert select_external(groups, 0, "uniform", 0, {}, random.Random(0)) == []
    assert select_external([], 3, "uniform", 0, {}, random.Random(0)) == []


def test_uniform_covers_every_group():
    groups = [group(source=f"p{i}") for i in range(6)]
    rng = random.Random(0)
    seen = set()
    for _ in range(200):
        seen.update(select_external(groups, 1, "uniform", 0, {}, rng))
    assert seen == set(range(6))


def test_nonzero_advantage_never_picks_flat_groups():
    groups = [
        group(rewards=(1.0, 1.0)), group(rewards=(0.0, 1.0)), group(rewards=(0.0, 0.0)),
        group(rewards=(0.5, 0.0, 0.5)), group(rewards=(0.3, 0.3, 0.3)),
    ]
    informative = {1, 3}
    rng = random.Random(1)
    for _ in range(200):
        picked = select_external(groups, 1, "nonzero_advantage", 0, {}, rng)
        assert len(picked) == 1 and picked[0] in informative
    # Asking for more than there are informative groups gives exactly the informative ones.
    assert sorted(select_external(groups, 4, "nonzero_advantage", 0, {}, rng)) == [1, 3]
    flat = [group(rewards=(1.0, 1.0)), group(rewards=(0.0, 0.0))]
    assert select_external(flat, 2, "nonzero_advantage", 0, {}, rng) == []


def test_fresh_quality_never_picks_zero_weight_groups():
    groups = [
        group(version=3, source="A", rewards=(0.0, 1.0)),
        group(version=3, source="A", rewards=(1.0, 1.0)),  # flat: weight 0
        group(version=3, source="Z", rewards=(0.0, 1.0)),  # sender quality 0: weight 0
        group(version=0, source="B", rewards=(1.0, 0.0)),  # stale but positive
    ]
    quality = {"A": 0.8, "B": 0.5, "Z": 0.0}
    rng = random.Random(2)
    for _ in range(200):
        picked = select_external(groups, 4, "fresh_quality", 3, quality, rng)
        assert sorted(picked) == [0, 3]
        one = select_external(groups, 1, "fresh_quality", 3, quality, rng)
        assert len(one) == 1 and one[0] in (0, 3)


def test_fresh_quality_prefers_higher_weights():
    # Both fresh and informative; sender qualities 0.9 and 0.1: with k = 1 the
    # Efraimidis-Spirakis draw picks group 0 with probability 0.9 / (0.9 + 0.1) = 0.9.
    groups = [group(version=4, source="good"), group(version=4, source="bad")]
    rng = random.Random(123)
    draws = 4000
    good = sum(select_external(groups, 1, "fresh_quality", 4, {"good": 0.9, "bad": 0.1}, rng) == [0] for _ in range(draws))
    assert 0.87 < good / draws < 0.93
    # Same sender quality, one group 3 versions stale: weights 1 * 0.5 and 0.25 * 0.5 -> P(fresh) = 0.8.
    groups = [group(version=10, source="x"), group(version=7, source="x")]
    fresh = sum(select_external(groups, 1, "fresh_quality", 10, {}, rng) == [0] for _ in range(draws))
    assert 0.77 < fresh / draws < 0.83


def test_unknown_policy_raises():
    assert "bogus" not in POLICIES
    with pytest.raises(ValueError, match="bogus"):
        select_external([group()], 1, "bogus", 0, {}, random.Random(0))


def test_every_policy_but_uniform_draws_only_groups_whose_rewards_differ():
    flat, informative = group(rewards=[1.0, 1.0]), group(rewards=[0.0, 1.0])
    for policy in POLICIES:
        assert draws_only_informative(policy) == (policy != "uniform")
        assert drawable(informative, policy) and drawable(flat, policy) == (policy == "uniform")
