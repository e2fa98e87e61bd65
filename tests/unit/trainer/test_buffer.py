"""trainer/buffer.py: the buffer's external pool (staleness, bounds, one use per group, waits, counts)."""
import threading

from swarmnode.trainer.buffer import EXTERNAL_POOL_CAPACITY, SUPPLY_MEMORY_S, ExperienceBuffer
from tests.unit.trainer.helpers import group


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


def with_recent_supply(buffer: ExperienceBuffer, version: int) -> ExperienceBuffer:
    """A peer's group arrived just now and was trained: peers are expected to send more."""
    buffer.put([group(version=version, source="earlier")])
    buffer.take(n_local=0, n_external=1, version=version)
    return buffer


def test_take_waits_for_external_groups_when_asked():
    buffer = with_recent_supply(ExperienceBuffer(max_staleness=1, external_max_staleness=4), 5)
    buffer.put([group(version=5)])
    timer = threading.Timer(0.2, lambda: buffer.put([group(version=5, source="peer")]))
    timer.start()
    take = buffer.take(n_local=1, n_external=1, version=5, external_wait=10.0)
    timer.join()
    assert [g.source for g in take.groups] == ["local", "peer"]
    assert buffer.stats.external_waits == 1 and buffer.stats.external_waits_skipped == 0
    # Without external_wait it takes what is there (nothing) at once.
    buffer.put([group(version=5)])
    assert [g.source for g in buffer.take(n_local=1, n_external=1, version=5).groups] == ["local"]


def test_flat_groups_do_not_end_the_wait_of_a_policy_that_never_draws_them():
    buffer = with_recent_supply(ExperienceBuffer(max_staleness=1, external_max_staleness=4,
                                                 selection="nonzero_advantage"), 5)
    # A pool of flat groups (all samples scored the same): nonzero_advantage never draws them.
    buffer.put([group(version=5)] + [group(version=5, source="flat", rewards=(1.0, 1.0)) for _ in range(8)])
    timer = threading.Timer(0.2, lambda: buffer.put([group(version=5, source="peer")]))
    timer.start()
    take = buffer.take(n_local=1, n_external=1, version=5, external_wait=30.0)
    timer.join()
    # Counting the flat ones, the wait ended at once and the step took no peer's group.
    assert [g.source for g in take.groups] == ["local", "peer"]
    # Under uniform every group is drawable: the same pool ends the wait at once.
    uniform = ExperienceBuffer(max_staleness=1, external_max_staleness=4, selection="uniform", seed=1)
    uniform.put([group(version=5)] + [group(version=5, source="flat", rewards=(1.0, 1.0))])
    assert [g.source for g in uniform.take(n_local=1, n_external=1, version=5, external_wait=30.0).groups] == [
        "local", "flat"]


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def take_as_a_peer_sends(buffer: ExperienceBuffer, external_wait: float) -> list[str]:
    """One step of 1 own + 1 peer's group at version 5 while a peer's group arrives 0.1 s in:
    the sources of the groups it took."""
    buffer.put([group(version=5)])
    timer = threading.Timer(0.1, lambda: buffer.put([group(version=5, source="peer")]))
    timer.start()
    try:
        return [g.source for g in buffer.take(1, 1, version=5, external_wait=external_wait).groups]
    finally:
        timer.join()


def test_a_step_does_not_wait_for_peers_that_send_nothing():
    clock = FakeClock()
    buffer = ExperienceBuffer(max_staleness=1, external_max_staleness=100, selection="nonzero_advantage", clock=clock)
    # No peer's group ever came (a lone node, or partners not found yet): no wait.
    buffer.put([group(version=5)])
    assert [g.source for g in buffer.take(1, 1, version=5, external_wait=2.0).groups] == ["local"]
    assert buffer.stats.external_waits == 0 and buffer.stats.external_waits_skipped == 1
    # Flat groups (never drawn here) are no sign of supply either.
    buffer.put([group(version=5), group(version=5, source="flat", rewards=(1.0, 1.0))])
    assert [g.source for g in buffer.take(1, 1, version=5, external_wait=2.0).groups] == ["local"]
    assert buffer.stats.external_waits_skipped == 2
    # A peer's drawable group came 8 s ago (SUPPLY_MEMORY_S; 4 waits of 1 s are shorter): peers
    # are expected, and a step short of groups waits (here until a group arrives).
    buffer.put([group(version=5, source="peer")])
    buffer.take(0, 1, version=5)
    clock.now += SUPPLY_MEMORY_S
    assert take_as_a_peer_sends(buffer, external_wait=1000.0) == ["local", "peer"]
    assert buffer.stats.external_waits == 1
    # Nothing since (the partner was ignored, or left): past the memory the wait is skipped.
    clock.now += SUPPLY_MEMORY_S + 0.5
    buffer.put([group(version=5)])
    assert [g.source for g in buffer.take(1, 1, version=5, external_wait=1.0).groups] == ["local"]
    assert buffer.stats.external_waits == 1 and buffer.stats.external_waits_skipped == 3
    # A longer wait remembers longer: 4 waits of 10 s.
    assert take_as_a_peer_sends(buffer, external_wait=10.0) == ["local", "peer"]
    assert buffer.stats.external_waits == 2


def test_buffer_counts_groups_trained_per_sender_bounded_and_staleness_apart():
    from swarmnode.trainer.buffer import BufferStats

    stats = BufferStats()
    for sender, tau in (("a", 1), ("a", 4), ("b", 7), ("c", 0)):
        stats.count_sender(sender, tau, cap=2)  # c replaces b, the sender with the fewest
    assert dict(stats.external_taken_by_sender) == {"a": 2, "c": 1}
    assert stats.mean_staleness_by_sender() == {"a": 2.5, "c": 0.0}  # b's sum left with it
    buffer = ExperienceBuffer(max_staleness=2, external_max_staleness=8)
    buffer.put([group(version=3, source="local"), group(version=1, source="peer")])
    take = buffer.take(1, 1, version=4)
    assert len(take.groups) == 2
    assert dict(buffer.stats.staleness_local) == {1: 1} and dict(buffer.stats.staleness_external) == {3: 1}
    assert dict(buffer.stats.external_taken_by_sender) == {"peer": 1}
    assert buffer.stats.mean_staleness_by_sender() == {"peer": 3.0}


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


def test_buffer_drops_stale_and_composes_local_and_external():
    buffer = ExperienceBuffer(max_staleness=1)
    buffer.put([group(version=0), group(version=2), group(version=3), group(version=3, source="peerA")])
    take = buffer.take(n_local=1, n_external=4, version=3)
    assert [g.policy_version for g in take.groups] == [2, 3]  # v0 is 3 behind: dropped
    assert [g.source for g in take.groups] == ["local", "peerA"]
    assert take.dropped_stale == 1 and buffer.stats.dropped_stale == 1
    assert buffer.stats.staleness == {1: 1, 0: 1}


def test_buffer_take_waits_for_local_groups():
    buffer = ExperienceBuffer(max_staleness=0)
    threading.Timer(0.2, lambda: buffer.put([group(version=5)])).start()
    take = buffer.take(n_local=1, n_external=0, version=5, timeout=5)
    assert len(take.groups) == 1
    buffer.close()
    assert buffer.take(n_local=3, n_external=0, version=5).groups == []


def test_buffer_never_keeps_a_group_from_the_future():
    from tests.unit.trainer.helpers import group

    buffer = ExperienceBuffer(max_staleness=4)
    buffer.put([group(version=9, source="peer"), group(version=5, source="peer"), group(version=5)])
    take = buffer.take(n_local=1, n_external=2, version=5)
    assert [g.policy_version for g in take.groups] == [5, 5] and take.dropped_stale == 1
