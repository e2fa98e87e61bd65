"""What one peer may cost a node: bounded per-peer state, rate limits, lifetimes, persisted
standings, and the trainer's weight bound on peers' samples (all pure, no network)."""
import math

import pytest
import torch

from swarmnode.protocol import Rejected, RejectReason, build_peer_record, check_peer_record
from swarmnode.protocol.rollout_messages import build_rollout_announcement, check_rollout_announcement
from swarmnode.store.standing import StandingRow, StandingStore
from swarmnode.swarm.lru_map import LRUMap
from swarmnode.swarm.peers import UNVERIFIED, MessageStats, PeerTable, RecordIntake
from swarmnode.swarm.ratelimit import PeerRateLimiter, TokenBucket
from swarmnode.swarm.rollout_bookkeeping import SenderLedger
from swarmnode.swarm.windows import peer_records_key
from swarmnode.trainer.buffer import ExperienceBuffer
from swarmnode.trainer.objectives import mean_logprob_gap, truncate_behavior_logp
from tests.helpers import record_fields

FIELDS = record_fields("s")
NOW = 1000.0


def reason_of(fn, *args, **kwargs) -> Rejected:
    with pytest.raises(Rejected) as info:
        fn(*args, **kwargs)
    return info.value


# -- bounded maps ------------------------------------------------------------------------------


def test_lru_map_evicts_least_recently_used_and_counts():
    m = LRUMap(2)
    m["a"], m["b"] = 1, 2
    assert m.get("a") == 1  # a is now the most recent
    m["c"] = 3
    assert list(m) == ["a", "c"] and m.evicted == 1
    assert m.setdefault("d", lambda: 4) == 4 and list(m) == ["c", "d"] and m.evicted == 2


def test_lru_map_evicts_protected_entries_last():
    m = LRUMap(2, protect=lambda v: v == "keep")
    m["a"], m["b"] = "keep", "x"
    m["c"] = "y"  # a is the oldest, but protected: b goes
    assert list(m) == ["a", "c"]
    m2 = LRUMap(1, protect=lambda v: True)
    m2["a"], m2["b"] = 1, 2  # all protected: the oldest goes after all
    assert list(m2) == ["b"]


# -- rate limits -------------------------------------------------------------------------------


def test_token_bucket_by_hand():
    bucket = TokenBucket(rate=2.0, burst=3.0, tokens=3.0, updated=0.0)
    assert [bucket.take(0.0) for _ in range(4)] == [True, True, True, False]  # the burst, then empty
    assert bucket.take(0.25) is False  # 0.5 token: not enough
    assert bucket.take(0.5) is True  # 1.0 token at t=0.5
    assert bucket.take(100.0) and bucket.tokens == pytest.approx(2.0)  # refilled to the burst (3) minus 1


def test_rate_limiter_is_per_peer_and_bounded():
    limiter = PeerRateLimiter(rate=1.0, burst=2, max_peers=3)
    assert [limiter.allow("flood", 0.0) for _ in range(5)] == [True, True, False, False, False]
    assert limiter.allow("honest", 0.0)  # another peer's bucket is untouched
    assert limiter.refused == 3
    for i in range(10):
        limiter.allow(f"sybil{i}", 0.0)
    assert len(limiter) == 3


# -- per-sender state --------------------------------------------------------------------------


def test_message_stats_bound_senders_and_never_blame_a_claimed_id():
    stats = MessageStats(max_senders=2)
    stats.reject(RejectReason.BAD_SIGNATURE, None)
    for i in range(5):
        stats.reject(RejectReason.MALFORMED, f"p{i}")
    assert stats.rejected == {"bad_signature": 1, "malformed": 5}
    assert set(stats.rejected_by_sender) == {"p3", "p4"} and stats.senders_evicted == 4
    stats.reject(RejectReason.KEY_BINDING, None)
    assert stats.rejected_by_sender[UNVERIFIED] == {"key_binding": 1}


def test_forged_record_naming_an_honest_peer_is_not_counted_against_it(make_identity):
    honest, mallory = make_identity(), make_identity()
    stats = MessageStats()
    intake = RecordIntake(PeerTable("self"), stats, "s", window_s=10.0)
    from swarmnode.protocol import MessageKind, seal
    from swarmnode.protocol.generated import peer_record_pb2

    # Mallory signs a record that claims the honest peer's id (with her own binding).
    claim = peer_record_pb2.PeerRecord(peer_id=honest.peer_id, public_key=mallory.public_key,
                                       peer_id_binding=mallory.bind_signing_key(), swarm="s", timestamp=NOW,
                                       expires_at=NOW + 10)

    class ClaimsHonest:
        peer_id = honest.peer_id
        public_key = mallory.public_key
        sign = staticmethod(mallory.sign)

    assert not intake.admit(peer_records_key("s", 100), honest.peer_id, seal(ClaimsHonest, MessageKind.PEER_RECORD, claim),
                            NOW + 10, NOW + 1)
    assert stats.rejected == {"key_binding": 1} and honest.peer_id not in stats.rejected_by_sender


def test_peer_table_is_bounded_least_recently_refreshed_first(make_identity):
    a, b, c = make_identity(), make_identity(), make_identity()
    table = PeerTable("self", capacity=2)
    rec = lambda who, t: check_peer_record(build_peer_record(who, FIELDS, t, 10.0), subkey=who.peer_id, swarm="s", now=t)
    table.offer(rec(a, NOW), NOW)
    table.offer(rec(b, NOW), NOW)
    table.offer(rec(a, NOW + 1), NOW + 1)  # a refreshed: b is now the least recent
    table.offer(rec(c, NOW + 2), NOW + 2)
    assert {e.peer_id for e in table.entries()} == {a.peer_id, c.peer_id} and table.evicted == 1


def test_sender_ledger_is_bounded_and_keeps_ignored_peers():
    ledger = SenderLedger(strike_limit=1, strike_window_s=60, ignore_s=100, backlog=4, max_peers=2)
    assert ledger.record("bad", 0, 2, NOW)  # over the strike limit: ignored
    for i in range(5):  # a flood of fresh identities
        ledger.record(f"sybil{i}", 0, 0, NOW + 1)
    assert len(ledger) == 2 and ledger.ignored("bad", NOW + 2) and ledger.evicted == 4


def test_standings_persist_and_restore(tmp_path):
    store = StandingStore(tmp_path / "rollouts.sqlite", max_rows=3)
    store.save([StandingRow("bad", 0, 25, NOW + 500, None), StandingRow("good", 12, 1, 0.0, 77)])
    store.save([StandingRow("good", 13, 1, 0.0, 80)])  # an update, not a second row
    store.close()
    reopened = StandingStore(tmp_path / "rollouts.sqlite", max_rows=3)
    rows = {r.peer: r for r in reopened.load(10)}
    assert rows == {"bad": StandingRow("bad", 0, 25, NOW + 500, None), "good": StandingRow("good", 13, 1, 0.0, 80)}
    ledger = SenderLedger(strike_limit=20, strike_window_s=60, ignore_s=100, backlog=4)
    for r in reopened.load(10):
        ledger.restore(r.peer, r.accepted, r.rejected, r.ignored_until, r.cursor)
    assert ledger.ignored("bad", NOW + 499) and not ledger.ignored("good", NOW)
    assert ledger.standing("good").cursor == 80 and ledger.standing("good").accepted == 13


def test_standing_store_prunes_to_its_row_bound(tmp_path):
    store = StandingStore(tmp_path / "r.sqlite", max_rows=3)
    store.PRUNE_EVERY = 1
    for i in range(10):
        store.save([StandingRow(f"p{i}", 0, 0, 0.0, None)])
    assert [r.peer for r in store.load(100)] == ["p7", "p8", "p9"]


# -- lifetimes ---------------------------------------------------------------------------------


def test_records_and_announcements_claiming_a_long_life_are_rejected(make_identity):
    a = make_identity()
    ten_years = 10 * 365 * 86400.0
    long_record = build_peer_record(a, FIELDS, NOW, ten_years)
    r = reason_of(check_peer_record, long_record, subkey=a.peer_id, swarm="s", now=NOW, max_ttl_s=120.0)
    assert r.reason == RejectReason.LIFETIME and r.sender == a.peer_id  # verified by then: its own fault
    assert check_peer_record(build_peer_record(a, FIELDS, NOW, 120.0), subkey=a.peer_id, swarm="s", now=NOW,
                             max_ttl_s=120.0).peer_id == a.peer_id
    announcement = build_rollout_announcement(a, window=1, first_batch_id=1, last_batch_id=2, model_fingerprint="fp", now=NOW,
                                              ttl_s=ten_years)
    assert reason_of(check_rollout_announcement, announcement, subkey=a.peer_id, now=NOW, max_ttl_s=120.0).reason == RejectReason.LIFETIME


def test_intake_keeps_at_most_max_values_per_key(make_identity):
    stats = MessageStats()
    intake = RecordIntake(PeerTable("self"), stats, "s", window_s=10.0, max_values_per_key=2)
    key = peer_records_key("s", 100)
    first, second, third = make_identity(), make_identity(), make_identity()
    value = lambda who: build_peer_record(who, FIELDS, NOW, 10.0)
    assert intake.admit(key, first.peer_id, value(first), NOW + 10, NOW + 1)
    assert intake.admit(key, second.peer_id, value(second), NOW + 10, NOW + 1)
    assert not intake.admit(key, third.peer_id, value(third), NOW + 10, NOW + 1)  # a third peer: over the cap
    assert intake.admit(key, first.peer_id, build_peer_record(first, FIELDS, NOW + 1, 10.0), NOW + 11, NOW + 1)
    assert intake.values_over_key_cap == 1


# -- versions and weights ----------------------------------------------------------------------


def test_buffer_never_keeps_a_group_from_the_future():
    from tests.unit.trainer.helpers import group

    buffer = ExperienceBuffer(max_staleness=4)
    buffer.put([group(version=9, source="peer"), group(version=5, source="peer"), group(version=5)])
    take = buffer.take(n_local=1, n_external=2, version=5)
    assert [g.policy_version for g in take.groups] == [5, 5] and take.dropped_stale == 1


def test_mean_logprob_gap_by_hand():
    logp = torch.tensor([[-1.0, -2.0, -9.0], [-0.5, -0.5, -0.5]])
    behavior = torch.tensor([[-1.5, -3.0, 0.0], [-0.5 - math.log(5)] * 3])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    # Row 0: ((-1 + 1.5) + (-2 + 3)) / 2 = 0.75 (the masked token is ignored); row 1: log 5 per token.
    assert mean_logprob_gap(logp, behavior, mask).tolist() == pytest.approx([0.75, math.log(5)])


def test_truncated_behavior_logp_caps_peer_weights_at_one():
    behavior = torch.tensor([[-2.0, -0.1], [-2.0, -0.1]])
    proximal = torch.tensor([[-1.0, -1.0], [-1.0, -1.0]])
    got = truncate_behavior_logp(behavior, proximal, torch.tensor([True, False]))
    # Peer row: w = exp(-1 - -2) = e > 1 becomes 1; w = exp(-0.9) < 1 stays. Local row unchanged.
    assert got.tolist() == [[-1.0, pytest.approx(-0.1)], [-2.0, pytest.approx(-0.1)]]
    assert torch.exp(proximal - got)[0].tolist() == pytest.approx([1.0, math.exp(-0.9)])


def test_trainer_drops_and_reports_samples_with_understated_logprobs(tiny_model):
    from swarmnode.tasks import TaskRef
    from swarmnode.trainer.experience import ScoredGroup
    from swarmnode.trainer.trainer import Trainer, TrainerConfig
    from tests.helpers import teacher_forced_logprobs

    prompt, completions = [1, 2, 3], [[5, 6], [7, 8]]
    with torch.no_grad():
        true = [teacher_forced_logprobs(tiny_model, prompt, c).tolist() for c in completions]

    def peer_group(source, shift):
        return ScoredGroup(ref=TaskRef("sum2", 0, 0), prompt_token_ids=prompt, completion_token_ids=completions,
                           behavior_logprobs=[[x - shift for x in lp] for lp in true], rewards=[1.0, 0.0],
                           policy_version=0, source=source)

    import copy

    local = peer_group("local", 0.0)
    clean = Trainer(copy.deepcopy(tiny_model), pad_id=0, config=TrainerConfig())
    trainer = Trainer(tiny_model, pad_id=0, config=TrainerConfig())  # the default gap: 1.5 nats/token
    # The liar's weights sit at the cap (5) on every token: a gap of log 5 = 1.61 nats/token.
    result = trainer.step([local, peer_group("honest", 0.0), peer_group("liar", math.log(5))])
    assert result.trained and result.implausible == {"liar": 2}
    # Its samples leave the objective entirely: the update equals one without the liar's group.
    assert clean.step([local, peer_group("honest", 0.0)]).implausible == {}
    for (name, got), want in zip(trainer.model.named_parameters(), clean.model.parameters()):
        assert torch.allclose(got, want, atol=1e-6), name


def test_sender_mean_by_hand():
    from swarmnode.trainer.objectives import sender_mean

    values = torch.tensor([2.0, -1.0, 4.0, 0.5])
    weights = torch.tensor([1.0, 3.0, 2.0, 0.0])
    senders = torch.tensor([7, 7, 9, 3])
    # sender 7: (1*2 + 3*-1) / 4 = -0.25; sender 9: 4; sender 3 has no weight: 0.
    assert sender_mean(values, weights, senders).tolist() == [-0.25, -0.25, 4.0, 0.0]


def test_one_stray_honest_sample_is_not_implausible(tiny_model):
    """A sample far off this policy is fine when the sender's samples as a whole are not."""
    from swarmnode.tasks import TaskRef
    from swarmnode.trainer.experience import ScoredGroup
    from swarmnode.trainer.trainer import Trainer, TrainerConfig
    from tests.helpers import teacher_forced_logprobs

    prompt, completions = [1, 2, 3], [[5, 6], [7, 8], [9, 10], [11, 12]]
    with torch.no_grad():
        true = [teacher_forced_logprobs(tiny_model, prompt, c).tolist() for c in completions]
    shifts = [2.0, -1.0, -0.5, -0.6]  # one sample 2 nats/token "too unlikely", the rest the other way
    group = ScoredGroup(ref=TaskRef("sum2", 0, 0), prompt_token_ids=prompt, completion_token_ids=completions,
                        behavior_logprobs=[[x - d for x in lp] for lp, d in zip(true, shifts)],
                        rewards=[1.0, 0.0, 1.0, 0.0], policy_version=0, source="honest")
    result = Trainer(tiny_model, pad_id=0, config=TrainerConfig()).step([group])
    assert result.trained and result.implausible == {}


def test_a_flood_of_strangers_keeps_contributors_standing():
    ledger = SenderLedger(strike_limit=20, strike_window_s=60, ignore_s=100, backlog=4, max_peers=3)
    ledger.record("honest", 2516, 0, NOW)
    ledger.advance("honest", 77)
    for i in range(50):  # announcing identities this node fetched from, that never delivered
        assert not ledger.ignored(f"sybil{i}", NOW)  # asking makes no entry
        ledger.standing(f"sybil{i}")
    assert ledger.standing("honest").accepted == 2516 and ledger.standing("honest").cursor == 77
    assert len(ledger) == 3


def test_standings_of_ignored_peers_outlast_a_flood_of_newer_ones(tmp_path):
    store = StandingStore(tmp_path / "r.sqlite", max_rows=100)
    store.save([StandingRow("offender", 0, 30, NOW + 500, None)])
    store.save([StandingRow(f"stranger{i}", 1, 0, 0.0, None) for i in range(20)])
    assert "offender" in [r.peer for r in store.load(5, now=NOW)]
    assert "offender" not in [r.peer for r in store.load(5, now=NOW + 600)]  # no longer ignored: recency only


def test_summary_trust_is_kept_with_the_standing_and_distrusted_peers_outlast_a_flood(tmp_path):
    store = StandingStore(tmp_path / "r.sqlite", max_rows=100)
    store.save([StandingRow("flipper", 3, 0, 0.0, 41)])
    store.save_trust([("flipper", -0.6, 7), ("newcomer", 0.15, 1)])
    store.save([StandingRow("flipper", 4, 0, 0.0, 42)])  # a rollout save leaves the trust as it is
    store.save([StandingRow(f"stranger{i}", 1, 0, 0.0, None) for i in range(20)])
    rows = {r.peer: r for r in store.load(3, now=NOW)}
    assert rows["flipper"] == StandingRow("flipper", 4, 0, 0.0, 42, -0.6, 7)  # distrusted: kept first
    assert "newcomer" not in rows
    assert {r.peer: r for r in store.load(100, now=NOW)}["newcomer"].trust_score == pytest.approx(0.15)


def test_a_standing_store_of_an_older_release_gains_the_trust_columns(tmp_path):
    import sqlite3

    path = tmp_path / "rollouts.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE peer_standing (peer TEXT PRIMARY KEY, accepted INTEGER NOT NULL, rejected INTEGER "
                 "NOT NULL, ignored_until REAL NOT NULL, cursor INTEGER, updated REAL NOT NULL)")
    conn.execute("INSERT INTO peer_standing VALUES ('old', 5, 1, 0, 9, 1.0)")
    conn.commit()
    conn.close()
    store = StandingStore(path, max_rows=10)
    assert store.load(10) == [StandingRow("old", 5, 1, 0.0, 9, None, 0)]
    store.save_trust([("old", 0.4, 3)])
    assert store.load(10) == [StandingRow("old", 5, 1, 0.0, 9, 0.4, 3)]
