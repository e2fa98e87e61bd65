"""Swarm sampling: the external-group selection policies, the buffer's external pool, and the
trainer's handling of external (possibly foreign-model) groups."""
import copy
import math
import random

import pytest
import torch

from swarmnode.tasks import TaskRef
from swarmnode.trainer.buffer import EXTERNAL_POOL_CAPACITY, ExperienceBuffer
from swarmnode.trainer.experience import ScoredGroup
from swarmnode.trainer.selection import (
    POLICIES,
    balanced_weights,
    fresh_quality_weights,
    need,
    own_need_weights,
    select_external,
    update_success,
    weighted_sample,
)
from swarmnode.trainer.trainer import Trainer, TrainerConfig
from tests.helpers import teacher_forced_logprobs

REF = TaskRef("sum2", 0, 0)


def group(version=0, source="local", rewards=(1.0, 0.0), completions=None, prompt=(1, 2, 3), logprobs=-0.5):
    if completions is None:
        completions = [(5 + i, 6) for i in range(len(rewards))]
    return ScoredGroup(
        ref=REF, prompt_token_ids=list(prompt), completion_token_ids=[list(c) for c in completions],
        behavior_logprobs=None if logprobs is None else [[logprobs] * len(c) for c in completions],
        rewards=list(rewards), policy_version=version, source=source,
    )


# -- selection.py ----------------------------------------------------------------------------


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


# -- buffer.py ---------------------------------------------------------------------------------


def test_buffer_composes_local_and_external_and_drops_stale_external():
    buffer = ExperienceBuffer(max_staleness=1, external_max_staleness=2)
    buffer.put([
        group(version=5), group(version=3, source="peerA"), group(version=6),
        group(version=4, source="peerB"), group(version=6, source="peerC"),
    ])
    assert buffer.external_available() == 3 and len(buffer) == 5
    take = buffer.take(n_local=2, n_external=5, version=6)
    # peerA's group is 3 versions behind (> 2): dropped; peerB's (2 behind) is still in bounds.
    assert [(g.source, g.policy_version) for g in take.groups] == [
        ("local", 5), ("local", 6), ("peerB", 4), ("peerC", 6)]
    assert take.dropped_stale == 1
    assert buffer.stats.external_dropped_stale == 1 and buffer.stats.dropped_stale == 0
    assert buffer.stats.external_taken == 2
    assert buffer.stats.staleness == {1: 1, 0: 2, 2: 1}
    assert buffer.external_available() == 0 and len(buffer) == 0


def test_external_bound_defaults_to_local_bound():
    buffer = ExperienceBuffer(max_staleness=1)
    assert buffer.external_max_staleness == 1
    buffer.put([group(version=8, source="p"), group(version=9, source="p"), group(version=10, source="p")])
    take = buffer.take(n_local=0, n_external=3, version=10)
    assert sorted(g.policy_version for g in take.groups) == [9, 10]
    assert buffer.stats.external_dropped_stale == 1 and buffer.stats.external_taken == 2


def test_external_groups_are_used_at_most_once():
    buffer = ExperienceBuffer(max_staleness=0, external_max_staleness=5, seed=7)
    pool = [group(version=0, source=f"p{i}") for i in range(5)]
    buffer.put(pool)
    first = buffer.take(n_local=0, n_external=2, version=0).groups
    second = buffer.take(n_local=0, n_external=2, version=0).groups
    third = buffer.take(n_local=0, n_external=2, version=0).groups
    fourth = buffer.take(n_local=0, n_external=2, version=0).groups
    assert (len(first), len(second), len(third), len(fourth)) == (2, 2, 1, 0)
    ids = [id(g) for g in first + second + third]
    assert len(set(ids)) == 5 and set(ids) == {id(g) for g in pool}
    assert buffer.stats.external_taken == 5 and buffer.external_available() == 0


def test_local_groups_wait_but_external_ones_are_optional():
    buffer = ExperienceBuffer(max_staleness=0)
    buffer.put([group(version=3), group(version=3)])
    take = buffer.take(n_local=2, n_external=4, version=3)  # no external groups: just the locals
    assert [g.source for g in take.groups] == ["local", "local"]
    assert buffer.stats.external_taken == 0


def test_buffer_selection_leaves_unpicked_groups_in_the_pool():
    buffer = ExperienceBuffer(max_staleness=0, external_max_staleness=10, selection="nonzero_advantage")
    flat_a, flat_b = group(source="a", rewards=(1.0, 1.0)), group(source="b", rewards=(0.0, 0.0))
    informative = group(source="c", rewards=(1.0, 0.0))
    buffer.put([flat_a, informative, flat_b])
    take = buffer.take(n_local=0, n_external=3, version=0)
    assert take.groups == [informative]
    assert buffer.stats.external_taken == 1 and buffer.external_available() == 2
    # The flat ones stay (never picked by this policy) until they go stale.
    assert buffer.take(n_local=0, n_external=3, version=0).groups == []
    assert buffer.take(n_local=0, n_external=3, version=11).groups == []
    assert buffer.stats.external_dropped_stale == 2 and buffer.external_available() == 0


def test_buffer_fresh_quality_uses_the_quality_callable():
    calls = []

    def quality():
        calls.append(1)
        return {"good": 1.0, "zero": 0.0}

    buffer = ExperienceBuffer(max_staleness=0, external_max_staleness=3, selection="fresh_quality", quality=quality)
    good, zero = group(version=2, source="good"), group(version=2, source="zero")
    buffer.put([zero, good])
    take = buffer.take(n_local=0, n_external=2, version=2)
    assert take.groups == [good] and calls
    assert buffer.external_available() == 1


def test_external_pool_keeps_only_the_newest():
    buffer = ExperienceBuffer(max_staleness=0)
    buffer.put([group(version=i, source="p") for i in range(EXTERNAL_POOL_CAPACITY + 3)])
    assert buffer.external_available() == EXTERNAL_POOL_CAPACITY
    take = buffer.take(n_local=0, n_external=1, version=EXTERNAL_POOL_CAPACITY + 2)
    assert [g.policy_version for g in take.groups] == [EXTERNAL_POOL_CAPACITY + 2]


# -- trainer.py --------------------------------------------------------------------------------


def test_local_reward_mean_counts_local_groups_only(tiny_model):
    trainer = Trainer(tiny_model, pad_id=0, config=TrainerConfig(lr=1e-3))
    groups = [
        group(rewards=(1.0, 0.0)),
        group(rewards=(1.0, 1.0, 1.0)),
        group(source="peerA", rewards=(0.0, 0.0)),
    ]
    result = trainer.step(groups)
    assert result.trained
    assert result.local_reward_mean == pytest.approx(4 / 5)
    assert result.reward_mean == pytest.approx(4 / 7)
    assert (result.local_groups, result.external_groups, result.groups, result.groups_used) == (2, 1, 3, 1)


def test_local_reward_mean_without_local_groups_or_gradient(tiny_model):
    trainer = Trainer(tiny_model, pad_id=0, config=TrainerConfig())
    only_external = trainer.step([group(source="p", rewards=(1.0, 0.0)), group(source="q", rewards=(1.0, 1.0))])
    assert only_external.trained and only_external.local_reward_mean is None
    assert (only_external.local_groups, only_external.external_groups) == (0, 2)
    # No gradient (every group flat): the mix is still reported.
    flat = trainer.step([group(rewards=(1.0, 1.0)), group(source="p", rewards=(0.0, 0.0, 0.0))])
    assert not flat.trained and flat.local_reward_mean == 1.0 and flat.reward_mean == pytest.approx(2 / 5)
    assert (flat.local_groups, flat.external_groups) == (1, 1)


def token_logprobs_of(model, prompt, completion):
    with torch.no_grad():
        return teacher_forced_logprobs(model, prompt, completion).tolist()


def test_group_without_behaviour_logprobs_trains_as_on_policy(tiny_model):
    prompt, good, bad = [1, 2, 3], [5, 6], [7, 8, 9]
    foreign = group(source="peerA", rewards=(1.0, 0.0), completions=(good, bad), prompt=prompt, logprobs=None)
    on_policy = copy.deepcopy(foreign)
    on_policy.behavior_logprobs = [token_logprobs_of(tiny_model, prompt, c) for c in (good, bad)]

    a, b = copy.deepcopy(tiny_model), copy.deepcopy(tiny_model)
    result = Trainer(a, 0, TrainerConfig(lr=1e-2)).step([foreign])
    reference = Trainer(b, 0, TrainerConfig(lr=1e-2)).step([on_policy])
    assert result.trained and result.version == 1 and math.isfinite(result.loss)
    # Behaviour = current policy: importance weight exactly 1, ratio 1 before the update.
    assert result.stats["mean_behavior_weight"] == pytest.approx(1.0, abs=1e-6)
    assert result.stats["mean_ratio"] == pytest.approx(1.0, abs=1e-6)
    assert result.loss == pytest.approx(reference.loss, abs=1e-5)
    for pa, pb in zip(a.parameters(), b.parameters()):
        assert torch.allclose(pa, pb, atol=1e-5)
    # ...and it moved the policy towards the rewarded completion.
    assert sum(token_logprobs_of(a, prompt, good)) > sum(token_logprobs_of(tiny_model, prompt, good))


def test_mixed_known_and_unknown_behaviour_in_one_batch(tiny_model):
    known = group(rewards=(1.0, 0.0), completions=((5, 6), (7,)), logprobs=-50.0)  # far off-policy: capped to 0
    unknown = group(source="peerB", rewards=(0.0, 1.0), completions=((9, 10, 11), (4,)), logprobs=None)
    result = Trainer(tiny_model, 0, TrainerConfig(lr=1e-2, behavior_weight_cap=5.0)).step([known, unknown])
    assert result.trained and result.groups_used == 2 and result.completion_tokens == 7
    # Weights: 0 on the 3 tokens of the known group (over the cap), 1 on the 4 of the unknown one.
    assert result.stats["mean_behavior_weight"] == pytest.approx(4 / 7, abs=1e-6)


def test_external_sample_mask_by_hand():
    from swarmnode.trainer.objectives import external_sample_mask

    advantages = torch.tensor([1.5, -0.5, -0.5, 0.0, -1.0])
    external = torch.tensor([True, True, False, True, False])
    # Only a peer's sample with negative advantage leaves: row 1.
    assert external_sample_mask(advantages, external).tolist() == [1.0, 0.0, 1.0, 1.0, 1.0]


def test_take_waits_for_external_groups_when_asked():
    import threading

    buffer = ExperienceBuffer(max_staleness=1, external_max_staleness=4)
    buffer.put([group(version=5)])
    timer = threading.Timer(0.2, lambda: buffer.put([group(version=5, source="peer")]))
    timer.start()
    take = buffer.take(n_local=1, n_external=1, version=5, external_wait=10.0)
    timer.join()
    assert [g.source for g in take.groups] == ["local", "peer"]
    # Without external_wait it takes what is there (nothing) at once.
    buffer.put([group(version=5)])
    assert [g.source for g in buffer.take(n_local=1, n_external=1, version=5).groups] == ["local"]


def test_buffer_counts_groups_trained_per_sender_bounded_and_staleness_apart():
    from swarmnode.trainer.buffer import BufferStats

    stats = BufferStats()
    for sender in ("a", "a", "b", "c"):
        stats.count_sender(sender, cap=2)  # c replaces b, the sender with the fewest
    assert dict(stats.external_taken_by_sender) == {"a": 2, "c": 1}
    buffer = ExperienceBuffer(max_staleness=2, external_max_staleness=8)
    buffer.put([group(version=3, source="local"), group(version=1, source="peer")])
    take = buffer.take(1, 1, version=4)
    assert len(take.groups) == 2
    assert dict(buffer.stats.staleness_local) == {1: 1} and dict(buffer.stats.staleness_external) == {3: 1}
    assert dict(buffer.stats.external_taken_by_sender) == {"peer": 1}


def test_external_usable_counts_what_the_selection_could_draw():
    buffer = ExperienceBuffer(max_staleness=1, external_max_staleness=2, selection="nonzero_advantage")
    buffer.put([
        group(version=6, source="peerA"),                      # informative, fresh: usable
        group(version=4, source="peerA"),                      # 2 behind at version 6: usable
        group(version=3, source="peerB"),                      # 3 behind: too stale
        group(version=6, source="peerB", rewards=(0.0, 0.0)),  # flat: never drawn
        group(version=7, source="peerC"),                      # from the future at version 6
        group(version=6),                                      # local: not in the pool
    ])
    assert buffer.external_usable(6) == 2
    assert buffer.external_usable(7) == 2  # version 7: peerA's v4 lapses, peerC's v7 counts
    uniform = ExperienceBuffer(max_staleness=1, external_max_staleness=2, selection="uniform")
    uniform.put([group(version=6, source="p", rewards=(0.0, 0.0)), group(version=6, source="p")])
    assert uniform.external_usable(6) == 2  # uniform draws flat groups too


def test_the_training_service_wants_peers_groups_until_the_pool_holds_ahead_steps(tmp_path):
    from swarmnode.config import NodeConfig
    from swarmnode.node.training import TrainingService, fetch_ahead_steps

    config = NodeConfig.model_validate({"training": {"external_rollouts": 2, "external_selection": "nonzero_advantage"},
                                        "rollouts": {"fetch_ahead_steps": 2}})
    training = TrainingService(config, tmp_path)
    try:
        assert training.external_wanted()  # no buffer yet
        training._buffer = ExperienceBuffer(max_staleness=1, external_max_staleness=8, selection="nonzero_advantage")
        training._buffer.put([group(source="p", rewards=(0.0, 0.0))] * 8 + [group(source="p")] * 3)
        assert training.external_wanted()  # 3 usable < 2 steps x 2 groups
        training._buffer.put([group(source="q")])
        assert not training.external_wanted()  # 4: enough
        config.scheduler.enabled = True  # the scheduler measures supply from what arrives
        assert training.external_wanted() and fetch_ahead_steps(config) == 0
        config.scheduler.enabled, config.rollouts.fetch_ahead_steps = False, 0
        assert training.external_wanted()
    finally:
        training.metrics.close()
