"""Rollout gossip: announcements, sealed batches, the outbox and sender ledger, and the intake
that turns a peer's batch into external groups (all pure, no network)."""
import pytest

from swarmnode.identity import NodeIdentity, SigningKey
from swarmnode.protocol import build_peer_record
from swarmnode.protocol.codec import MessageKind, Rejected, RejectReason, seal
from swarmnode.protocol.generated import rollout_batch_pb2
from swarmnode.protocol.rollout_messages import (
    build_rollout_announcement,
    check_rollout_announcement,
    open_rollout_batch,
    seal_rollout_batch,
)
from swarmnode.protocol.signed_values import age_problem
from swarmnode.swarm.peers import MessageStats, PeerTable, RecordIntake
from swarmnode.swarm.rollout_bookkeeping import (
    MAX_BATCHES_PER_FETCH,
    MAX_ROLLOUT_FETCH_RESPONSE_BYTES,
    RolloutOutbox,
    SenderLedger,
    fetch_wanted,
    parse_rollout_fetch_response,
    rollout_fetch_request,
)
from swarmnode.swarm.transport import StoredValue
from swarmnode.swarm.windows import peer_records_key, rollouts_key
from swarmnode.tasks import TaskRef, get_task
from swarmnode.trainer.experience import ScoredGroup
from swarmnode.trainer.intake import RolloutIntake
from swarmnode.trainer.wire import groups_to_batch
from tests.helpers import record_fields

NOW = 1000.0
TTL = 30.0


def announce(identity, now=NOW, ttl=TTL, first=3, last=7, fingerprint="fp"):
    return build_rollout_announcement(identity, window=33, first_batch_id=first, last_batch_id=last,
                                      model_fingerprint=fingerprint, now=now, ttl_s=ttl)


def rejection(fn, *args, **kwargs) -> Rejected:
    with pytest.raises(Rejected) as info:
        fn(*args, **kwargs)
    return info.value


# -- announcements ------------------------------------------------------------------------------


def test_announcement_round_trip(make_identity):
    a = make_identity()
    checked = check_rollout_announcement(announce(a), subkey=a.peer_id, now=NOW + 1)
    m = checked.announcement
    assert checked.peer_id == a.peer_id and checked.public_key == a.public_key
    assert (m.window, m.first_batch_id, m.last_batch_id, m.model_fingerprint) == (33, 3, 7, "fp")
    assert (m.timestamp, m.expires_at) == (NOW, NOW + TTL)


def test_announcement_rejections(make_identity):
    a, b = make_identity(), make_identity()
    value = announce(a)
    r = rejection(check_rollout_announcement, value, subkey=b.peer_id, now=NOW)
    # a's valid value placed under b's subkey by anyone: not a's fault, so not counted against a
    assert r.reason == RejectReason.SUBKEY_MISMATCH and r.sender is None
    assert rejection(check_rollout_announcement, value, subkey=a.peer_id, now=NOW + TTL).reason == RejectReason.EXPIRED
    assert rejection(check_rollout_announcement, value, subkey=a.peer_id, now=NOW + TTL + 100).reason == RejectReason.EXPIRED
    assert rejection(check_rollout_announcement, value, subkey=a.peer_id, now=NOW - 31).reason == RejectReason.FROM_FUTURE
    assert check_rollout_announcement(value, subkey=a.peer_id, now=NOW - 29).peer_id == a.peer_id  # within clock skew
    assert rejection(check_rollout_announcement, b"garbage", subkey=a.peer_id, now=NOW).reason == RejectReason.MALFORMED
    assert rejection(check_rollout_announcement, "not bytes", subkey=a.peer_id, now=NOW).reason == RejectReason.MALFORMED
    # A peer record is not an announcement.
    record = build_peer_record(a, record_fields("s"), NOW, TTL)
    assert rejection(check_rollout_announcement, record, subkey=a.peer_id, now=NOW).reason == RejectReason.WRONG_KIND


def forged_announcement(signer, binder, peer_id=None):
    """An announcement sealed by `signer` whose peer_id_binding was made by `binder`."""
    message = rollout_batch_pb2.RolloutAnnouncement(
        peer_id=peer_id or signer.peer_id, window=33, first_batch_id=0, last_batch_id=1, model_fingerprint="fp",
        timestamp=NOW, expires_at=NOW + TTL, peer_id_binding=binder.bind_signing_key(),
    )
    return seal(signer, MessageKind.ROLLOUT_ANNOUNCEMENT, message)


def test_announcement_with_another_identitys_binding_is_refused(make_identity):
    a, b = make_identity(), make_identity()
    r = rejection(check_rollout_announcement, forged_announcement(a, b), subkey=a.peer_id, now=NOW)
    assert r.reason == RejectReason.KEY_BINDING
    # Claiming another peer's id (with that peer's genuine binding) inside one's own envelope.
    r = rejection(check_rollout_announcement, forged_announcement(a, b, peer_id=b.peer_id), subkey=b.peer_id, now=NOW)
    assert r.reason == RejectReason.KEY_BINDING
    # Same libp2p key, but a node key the libp2p key never vouched for.
    thief = NodeIdentity(SigningKey.generate(), a.p2p_key, a.p2p_identity_path)
    stolen_binding = rollout_batch_pb2.RolloutAnnouncement(
        peer_id=a.peer_id, window=1, first_batch_id=0, last_batch_id=0, timestamp=NOW, expires_at=NOW + TTL,
        peer_id_binding=a.bind_signing_key(),
    )
    r = rejection(check_rollout_announcement, seal(thief, MessageKind.ROLLOUT_ANNOUNCEMENT, stolen_binding),
                  subkey=a.peer_id, now=NOW)
    assert r.reason == RejectReason.KEY_BINDING


def test_intake_admits_announcements_on_rollouts_keys(make_identity):
    me, peer, other = make_identity(), make_identity(), make_identity()
    stats = MessageStats()
    intake = RecordIntake(PeerTable(me.peer_id), stats, "s", window_s=10.0)
    keys = intake.known_keys(NOW + 5)  # window 100
    assert [k for k in keys if "/rollouts/" in k] == [rollouts_key("s", w) for w in (98, 99, 100, 101)]
    assert rollouts_key("s", 100) == "swarmnode/s/rollouts/100"
    key = rollouts_key("s", 100)
    value = announce(peer)
    assert intake.admit(key, peer.peer_id, value, expiration=NOW + TTL, now=NOW + 1)
    assert intake.admit(key, peer.peer_id, value, expiration=NOW + TTL, now=NOW + 1)  # re-judged from cache
    assert not intake.admit(key, peer.peer_id, forged_announcement(peer, other), expiration=NOW + TTL, now=NOW + 1)
    assert not intake.admit(key, other.peer_id, value, expiration=NOW + TTL, now=NOW + 1)  # another's subkey
    assert not intake.admit(key, peer.peer_id, value, expiration=NOW + 3600, now=NOW + 1)  # kept too long
    # A peer record is not admitted under a rollouts key, nor an announcement under a peers key.
    record = build_peer_record(peer, record_fields("s"), NOW, TTL)
    assert not intake.admit(key, peer.peer_id, record, expiration=NOW + TTL, now=NOW + 1)
    assert not intake.admit(peer_records_key("s", 100), peer.peer_id, value, expiration=NOW + TTL, now=NOW + 1)
    assert intake.admit(peer_records_key("s", 100), peer.peer_id, record, expiration=NOW + TTL, now=NOW + 1)
    assert stats.rejected == {"key_binding": 1, "subkey_mismatch": 1, "dht_expiration": 1, "wrong_kind": 2}
    # A forged binding proves no identity: counted as unverified, never against the peer it names.
    assert stats.rejected_by_sender["unverified"]["key_binding"] == 1
    # Its own valid values, misplaced (another subkey) or pinned (a far DHT expiration) by anyone: not its fault.
    assert peer.peer_id not in stats.rejected_by_sender


def test_intake_announcements_keeps_valid_ones_of_others(make_identity):
    me, a, b = make_identity(), make_identity(), make_identity()
    stats = MessageStats()
    intake = RecordIntake(PeerTable(me.peer_id), stats, "s", window_s=10.0)
    values = [
        StoredValue(a.peer_id, announce(a), NOW + TTL),
        StoredValue(me.peer_id, announce(me), NOW + TTL),  # own: skipped, not rejected
        StoredValue(b.peer_id, forged_announcement(b, a), NOW + TTL),
        StoredValue("x", b"garbage", NOW + TTL),
    ]
    for _ in range(3):  # three polls of the same DHT contents: each bad value counted once
        got = intake.announcements(values, now=NOW + 1)
        assert [x.peer_id for x in got] == [a.peer_id]
    assert stats.rejected == {"key_binding": 1, "malformed": 1}


# -- sealed batches -----------------------------------------------------------------------------


def small_batch(created_at=NOW):
    batch = rollout_batch_pb2.RolloutBatch(window=1, policy_version=2, model_fingerprint="fp", batch_id=5,
                                           created_at=created_at, temperature=1.0, top_p=1.0)
    wire = batch.groups.add(prompt="1+2=")
    wire.task.task = "sum2"
    wire.completions.add(text="3", token_ids=[51], logprobs=[-0.5], reported_reward=1.0, finish_reason="length")
    return batch


def test_open_rollout_batch_round_trip_and_rejections(make_identity):
    a, b = make_identity(), make_identity()
    data = seal_rollout_batch(a, small_batch())
    batch, size = open_rollout_batch(data, served_by=a.peer_id, public_key=a.public_key)
    assert batch == small_batch() and size == len(data)
    r = rejection(open_rollout_batch, data, served_by=b.peer_id, public_key=b.public_key)
    assert r.reason == RejectReason.SENDER_MISMATCH and r.sender == b.peer_id
    # Same peer id (libp2p key), but signed with a node key other than the announced one.
    other_key = NodeIdentity(SigningKey.generate(), a.p2p_key, a.p2p_identity_path)
    assert other_key.peer_id == a.peer_id
    r = rejection(open_rollout_batch, seal_rollout_batch(other_key, small_batch()), served_by=a.peer_id,
                  public_key=a.public_key)
    assert r.reason == RejectReason.KEY_BINDING
    opened = dict(served_by=a.peer_id, public_key=a.public_key)
    r = rejection(open_rollout_batch, b"garbage", **opened)
    assert r.reason == RejectReason.MALFORMED and r.sender == a.peer_id  # libp2p authenticated the server
    assert rejection(open_rollout_batch, announce(a), **opened).reason == RejectReason.WRONG_KIND
    # Made too long ago, or in the future (beyond the clock-skew allowance).
    for created_at, reason in ((NOW - 301, RejectReason.EXPIRED), (NOW + 31, RejectReason.FROM_FUTURE)):
        assert age_problem(created_at, now=NOW, max_age_s=300)[0] == reason
    assert age_problem(NOW - 299, now=NOW, max_age_s=300) is None
    assert age_problem(NOW + 29, now=NOW, max_age_s=300) is None


# -- outbox ------------------------------------------------------------------------------------


def test_outbox_ids_capacity_and_after():
    box = RolloutOutbox(first_batch_id=10, capacity=3)
    assert box.id_range() is None and box.after(0, 16) == []
    ids = [box.next_batch_id() for _ in range(5)]
    assert ids == [10, 11, 12, 13, 14]
    for i in ids:
        box.add(i, b"env%d" % i)
    assert box.id_range() == (12, 14)  # 10 and 11 evicted
    assert box.after(0, 16) == [b"env12", b"env13", b"env14"]
    assert box.after(12, 16) == [b"env13", b"env14"]
    assert box.after(11, 1) == [b"env12"]
    assert box.after(14, 16) == []
    assert box.batches_served == 6 and box.bytes_served == 6 * 5


def test_outbox_after_caps_batches_and_bytes():
    box = RolloutOutbox(first_batch_id=0, capacity=100)
    for i in range(MAX_BATCHES_PER_FETCH + 4):
        box.add(box.next_batch_id(), bytes([i]))
    got = box.after(-1, 1000)
    assert got == [bytes([i]) for i in range(MAX_BATCHES_PER_FETCH)]
    big = RolloutOutbox(first_batch_id=0, capacity=10)
    chunk = (MAX_ROLLOUT_FETCH_RESPONSE_BYTES * 2) // 5  # 0.4 of the cap: two fit, the third would not
    for i in range(4):
        big.add(big.next_batch_id(), bytes([i]) * chunk)
    assert [e[0] for e in big.after(-1, 16)] == [0, 1]
    assert [e[0] for e in big.after(1, 16)] == [2, 3]


def test_outbox_after_newest_skips_the_older_backlog():
    box = RolloutOutbox(first_batch_id=1, capacity=16)
    for i in range(1, 11):
        box.add(i, b"e%d" % i)
    assert box.after(2, 3, newest=True) == [b"e8", b"e9", b"e10"]  # newest three, oldest first
    assert box.after(2, 3) == [b"e3", b"e4", b"e5"]
    assert box.after(8, 4, newest=True) == [b"e9", b"e10"]  # fewer than asked: all of them
    assert box.after(10, 4, newest=True) == [] and box.after(2, 0, newest=True) == []
    parsed = rollout_batch_pb2.RolloutFetchRequest.FromString(rollout_fetch_request(2, max_batches=3, newest=True))
    assert parsed.newest and parse_rollout_fetch_response(box.answer(rollout_fetch_request(2, max_batches=3, newest=True))) == [
        b"e8", b"e9", b"e10"]
    assert not rollout_batch_pb2.RolloutFetchRequest.FromString(rollout_fetch_request(2)).newest  # a plain fetch


def test_fetch_wanted_while_the_pool_holds_less_than_ahead_steps_take():
    assert fetch_wanted(usable=31, per_step=16, ahead_steps=2.0)  # 31 < 2 * 16
    assert not fetch_wanted(usable=32, per_step=16, ahead_steps=2.0)
    assert fetch_wanted(usable=5, per_step=4, ahead_steps=1.5) and not fetch_wanted(6, 4, 1.5)  # 6 = 1.5 * 4
    assert fetch_wanted(usable=10_000, per_step=16, ahead_steps=0)  # 0: fetch everything
    assert fetch_wanted(usable=1, per_step=0, ahead_steps=2.0) and not fetch_wanted(2, 0, 2.0)  # J=0 counts as 1


def test_outbox_answer_and_fetch_round_trip():
    box = RolloutOutbox(first_batch_id=1, capacity=8)
    for i in range(1, 5):
        box.add(i, b"batch-%d" % i)
    request = rollout_fetch_request(2, max_batches=5)
    parsed = rollout_batch_pb2.RolloutFetchRequest.FromString(request)
    assert (parsed.after_batch_id, parsed.max_batches) == (2, 5)
    assert rollout_batch_pb2.RolloutFetchRequest.FromString(rollout_fetch_request(7)).max_batches == MAX_BATCHES_PER_FETCH
    assert parse_rollout_fetch_response(box.answer(request)) == [b"batch-3", b"batch-4"]
    assert parse_rollout_fetch_response(box.answer(rollout_fetch_request(0, max_batches=1))) == [b"batch-1"]
    served = box.batches_served
    for garbage in (b"garbage", b"\xff" * 10, rollout_fetch_request(0) + b"\x00" * 64):  # undecodable / too long
        response = box.answer(garbage)
        assert parse_rollout_fetch_response(response) == []
        assert rollout_batch_pb2.RolloutFetchResponse.FromString(response).envelopes == []
    assert box.batches_served == served


def test_parse_fetch_response_refuses_garbage_and_excess():
    assert parse_rollout_fetch_response(b"\xff" * 10) is None
    assert parse_rollout_fetch_response(b"") == []
    too_many = rollout_batch_pb2.RolloutFetchResponse(envelopes=[b"x"] * (MAX_BATCHES_PER_FETCH + 1))
    assert parse_rollout_fetch_response(too_many.SerializeToString()) is None
    ok = rollout_batch_pb2.RolloutFetchResponse(envelopes=[b"a", b"b"])
    assert parse_rollout_fetch_response(ok.SerializeToString()) == [b"a", b"b"]
    huge = rollout_batch_pb2.RolloutFetchResponse(envelopes=[b"x" * (MAX_ROLLOUT_FETCH_RESPONSE_BYTES + 64 * MAX_BATCHES_PER_FETCH)])
    assert parse_rollout_fetch_response(huge.SerializeToString()) is None


# -- sender ledger ------------------------------------------------------------------------------


def test_ledger_cursor_backlog_and_advance():
    ledger = SenderLedger(strike_limit=3, strike_window_s=10.0, ignore_s=60.0, backlog=4)
    # New peer holding 1..20: fetch after 16, i.e. only 17, 18, 19, 20.
    assert ledger.start_after("p", 1, 20) == 16
    # New peer with fewer batches than the backlog: everything it holds.
    assert ledger.start_after("q", 5, 6) == 4
    ledger.advance("p", 20)
    assert ledger.start_after("p", 1, 20) is None
    assert ledger.start_after("p", 1, 25) == 20
    ledger.advance("p", 18)  # an older batch never moves the cursor back
    assert ledger.standing("p").cursor == 20
    # The peer dropped batches we never saw: start at its oldest held one.
    assert ledger.start_after("p", 30, 35) == 29


def test_ledger_strikes_ignore_and_forgive():
    ledger = SenderLedger(strike_limit=3, strike_window_s=10.0, ignore_s=60.0, backlog=4)
    assert not ledger.record("p", 0, 2, now=100.0)
    assert not ledger.record("p", 5, 1, now=105.0)  # 3 strikes: at the limit, not over it
    assert not ledger.ignored("p", 105.0)
    assert ledger.record("p", 0, 1, now=106.0)  # 4 > 3 within 10 s
    assert ledger.ignored("p", 106.0) and ledger.ignored("p", 165.9)
    assert not ledger.record("p", 0, 5, now=120.0)  # already ignored: no new time-out
    assert ledger.standing("p").ignored_until == 166.0
    assert not ledger.ignored("p", 166.0)
    # Strikes older than the window are forgotten.
    assert not ledger.record("r", 0, 3, now=0.0)
    assert not ledger.record("r", 0, 1, now=11.0)
    assert not ledger.ignored("r", 11.0)
    snapshot = ledger.snapshot(130.0)
    assert snapshot["p"] == {"accepted": 5, "rejected": 9, "quality": round(6 / 16, 3), "ignored": True}
    assert snapshot["r"]["ignored"] is False


def test_ledger_quality_is_laplace_smoothed():
    ledger = SenderLedger(strike_limit=100, strike_window_s=10.0, ignore_s=60.0, backlog=4)
    assert ledger.quality("new") == 0.5
    ledger.record("p", 3, 1, now=0.0)
    assert ledger.quality("p") == pytest.approx(4 / 6)
    ledger.record("p", 0, 4, now=1.0)
    assert ledger.quality("p") == pytest.approx(4 / 10)
    ledger.record("good", 8, 0, now=0.0)
    assert ledger.quality("good") == pytest.approx(9 / 10)


# -- trainer/intake.py, trainer/wire.py ----------------------------------------------------------

EOS = 256  # the bundled byte tokenizer: ids 0..255 are bytes, 256 EOS, 257 PAD


@pytest.fixture(scope="module")
def policy():
    from swarmnode.policy import load_policy

    return load_policy("bundled:tiny-policy")


def make_intake(policy, tasks=("sum2", "sum3"), temperature=1.0, foreign_tokens=64, base="base-a"):
    """An intake for a node generating at most 8 tokens (`foreign_tokens` for another model's re-tokenised text)."""
    return RolloutIntake(policy.tokenizer, model_fingerprint=policy.fingerprint, tasks=list(tasks), temperature=temperature,
                         max_completion_tokens=8, max_foreign_completion_tokens=foreign_tokens, base_fingerprint=base)


@pytest.fixture
def intake(policy):
    return make_intake(policy)


def byte_ids(text):
    return list(text.encode("utf-8"))


def scored(item, completions, *, texts=None, version=5, logprobs=None, reported=None, prompt=None):
    return ScoredGroup(
        ref=item.ref, prompt_token_ids=[1, 2], completion_token_ids=[list(c) for c in completions],
        behavior_logprobs=logprobs if logprobs is not None else [[-0.5] * len(c) for c in completions],
        rewards=list(reported or [1.0] * len(completions)), policy_version=version,
        texts=list(texts or []), prompt=item.question if prompt is None else prompt,
    )


def to_batch(groups, fingerprint, temperature=1.0, eos_ids=frozenset({EOS}), base="base-a"):
    return groups_to_batch(groups, window=4, batch_id=9, model_fingerprint=fingerprint, tokenizer_fingerprint="tok",
                           now=NOW, temperature=temperature, top_p=0.95, eos_ids=set(eos_ids), base_fingerprint=base)


def test_bundled_tokenizer_and_task_items_by_hand(policy):
    tok = policy.tokenizer
    assert len(tok) == 258 and tok.eos_token_id == EOS
    assert tok("74", add_special_tokens=False)["input_ids"] == [55, 52] == byte_ids("74")
    item = get_task("sum2").item(7, 0)
    assert (item.question, item.answer) == ("28+46=", "74")


def test_groups_to_batch_fields(make_identity):
    item = get_task("sum2").item(7, 0)
    g1 = scored(item, [byte_ids("74") + [EOS], byte_ids("7")], texts=["74", "7"], version=6,
                logprobs=[[-0.5, -0.25, -1.0], [-2.0]], reported=[1.0, 0.0])
    g2 = scored(get_task("sum3").item(7, 1), [byte_ids("1")], texts=[], version=4)
    batch = to_batch([g1, g2], "fp")
    assert (batch.window, batch.batch_id, batch.policy_version, batch.model_fingerprint) == (4, 9, 4, "fp")
    assert (batch.tokenizer_fingerprint, batch.created_at, batch.temperature) == ("tok", NOW, 1.0)
    assert batch.top_p == pytest.approx(0.95)
    first, second = batch.groups
    assert (first.task.task, first.task.seed, first.task.index, first.prompt) == ("sum2", 7, 0, "28+46=")
    assert [list(c.token_ids) for c in first.completions] == [[55, 52, EOS], [55]]
    assert [list(c.logprobs) for c in first.completions] == [[-0.5, -0.25, -1.0], [-2.0]]
    assert [c.finish_reason for c in first.completions] == ["stop", "length"]
    assert [c.reported_reward for c in first.completions] == [1.0, 0.0]
    assert [c.text for c in first.completions] == ["74", "7"]
    assert second.task.task == "sum3" and [c.text for c in second.completions] == [""]  # no texts kept


def test_same_model_batch_keeps_tokens_and_rescores(intake, policy, make_identity):
    a = make_identity()
    item = get_task("sum2").item(7, 0)  # "28+46=" -> "74"
    right, wrong = byte_ids("74") + [EOS], byte_ids("75") + [EOS]
    # The peer claims reward 1 for both, and even writes "74" in both text fields.
    g = scored(item, [right, wrong], texts=["74", "74"], logprobs=[[-0.5, -0.25, -1.0], [-0.125, -2.0, -0.75]],
               reported=[1.0, 1.0], version=5)
    data = seal_rollout_batch(a, to_batch([g], policy.fingerprint))
    batch, _ = open_rollout_batch(data, served_by=a.peer_id, public_key=a.public_key)
    result = intake.accept(batch, sender=a.peer_id, current_version=12)
    assert result.same_model and result.rejected == []
    (got,) = result.groups
    assert got.completion_token_ids == [right, wrong]
    assert got.behavior_logprobs == [[-0.5, -0.25, -1.0], [-0.125, -2.0, -0.75]]
    assert got.rewards == [1.0, 0.0]  # the tokens say "75": the node's verifier gives 0
    assert got.texts == ["74", "75"]
    # Stamped with this node's version at receipt: the sender's counter (5) means nothing here.
    assert got.policy_version == 12 and got.source == a.peer_id and not got.is_local
    assert got.ref == TaskRef("sum2", 7, 0) and got.prompt == "28+46="
    assert got.prompt_token_ids == byte_ids("28+46=")  # the bundled chat template is verbatim


def test_foreign_model_batch_is_retokenised_from_text(intake):
    item = get_task("sum2").item(7, 0)
    # Another model's ids (out of this vocabulary) and its own EOS (50256).
    g = scored(item, [[9999, 123, 50256], [4242, 77], [5, 6, 50256]],
               texts=["74", "75", "thinking...\n<answer>74</answer>"], reported=[0.0, 1.0, 0.0], version=40)
    result = intake.accept(to_batch([g], "another-model", eos_ids={50256}), sender="peerB", current_version=12)
    assert not result.same_model and result.rejected == []
    (got,) = result.groups
    assert got.behavior_logprobs is None
    assert got.completion_token_ids == [
        byte_ids("74") + [EOS],  # finished with "stop": this node's EOS appended
        byte_ids("75"),  # "length": no EOS
        byte_ids("thinking...\n<answer>74</answer>") + [EOS],
    ]
    assert got.rewards == [1.0, 0.0, 1.0]
    assert got.policy_version == 12  # re-scored under the current policy: fresh when received
    assert got.source == "peerB"


def test_completions_longer_than_this_node_generates_are_rejected_not_truncated(policy):
    intake = make_intake(policy, foreign_tokens=16)
    item = get_task("sum2").item(7, 0)
    # Another model: 16 tokens here (the allowance) pass, 17 do not.
    fits = scored(item, [[1], [2]], texts=["74\n" + "x" * 13, "nope"])
    (got,) = intake.accept(to_batch([fits], "other"), sender="p", current_version=0).groups
    assert got.completion_token_ids[0] == byte_ids("74\n" + "x" * 13) and got.rewards == [1.0, 0.0]
    too_long = scored(item, [[1], [2]], texts=["74\n" + "x" * 14, "nope"])
    result = intake.accept(to_batch([too_long], "other"), sender="p", current_version=0)
    assert result.groups == [] and result.rejected == [(RejectReason.TOO_LONG, "17 tokens here > 16")]
    # A text no tokenisation could fit is refused before it is tokenised (16,384 characters cost nothing).
    huge = scored(item, [[1]], texts=["7" * 16_384])
    assert intake.accept(to_batch([huge], "other"), sender="p", current_version=0).rejected == [
        (RejectReason.TOO_LONG, "16384 characters")]
    # The same model: at most max_new_tokens (8) token ids, EOS included.
    eight, nine = byte_ids("74xxxxx") + [EOS], byte_ids("74xxxxxx") + [EOS]
    assert intake.accept(to_batch([scored(item, [eight])], policy.fingerprint), "p", 0).groups
    result = intake.accept(to_batch([scored(item, [eight, nine])], policy.fingerprint), "p", 0)
    assert result.groups == [] and result.rejected == [(RejectReason.TOO_LONG, "9 tokens > 8")]
    empty = scored(item, [[1]], texts=[""])
    result = intake.accept(to_batch([empty], "other"), sender="p", current_version=0)
    assert result.groups == [] and [r for r, _ in result.rejected] == [RejectReason.INVALID_FIELD]


def test_intake_rejects_bad_groups_one_by_one(intake, policy):
    fp = policy.fingerprint
    good_item, other_item = get_task("sum2").item(7, 0), get_task("sum2").item(7, 1)
    good = scored(good_item, [byte_ids("74") + [EOS]])
    wrong_prompt = scored(good_item, [byte_ids("74")], prompt=other_item.question)
    unknown = scored(get_task("sum2").item(7, 0), [byte_ids("74")])
    unknown.ref = TaskRef("rg:not_here", 0, 0)
    out_of_vocab = scored(good_item, [byte_ids("74") + [258]], texts=["74"])
    short_logprobs = scored(good_item, [byte_ids("74")], logprobs=[[-0.5]])
    batch = to_batch([good, wrong_prompt, unknown, out_of_vocab], fp)
    result = intake.accept(batch, sender="p", current_version=3)
    assert [g.completion_token_ids for g in result.groups] == [[byte_ids("74") + [EOS]]]
    assert [r for r, _ in result.rejected] == [RejectReason.PROMPT_MISMATCH, RejectReason.MODEL_MISMATCH]
    assert result.skipped_other_task == 1
    # Log-probs that do not match the token ids are a model mismatch too (same-model path only).
    assert [r for r, _ in intake.accept(to_batch([short_logprobs], fp), "p", 3).rejected] == [RejectReason.MODEL_MISMATCH]
    # ...and out-of-vocabulary ids are harmless on the foreign path (only the text counts).
    foreign = intake.accept(to_batch([out_of_vocab], "other"), "p", 3)
    assert foreign.rejected == [] and foreign.groups[0].completion_token_ids == [byte_ids("74")]
    assert foreign.groups[0].rewards == [1.0]


def test_a_task_this_node_does_not_train_is_skipped_not_rejected(policy):
    only_sum2 = make_intake(policy, tasks=["sum2"])
    item = get_task("sum3").item(7, 0)
    result = only_sum2.accept(to_batch([scored(item, [byte_ids(item.answer)])], policy.fingerprint), "p", 0)
    assert result.groups == [] and result.rejected == [] and result.skipped_other_task == 1


# The wire carries temperature as a float32: 0.7 arrives as 0.699999988...
def test_same_model_at_a_temperature_not_exact_in_float32(policy):
    intake = make_intake(policy, tasks=["sum2"], temperature=0.7)
    item = get_task("sum2").item(7, 0)
    batch = to_batch([scored(item, [byte_ids("74") + [EOS]])], policy.fingerprint, temperature=0.7)
    assert intake.same_model(batch)


def test_different_temperature_is_not_the_same_model(policy):
    intake = make_intake(policy, tasks=["sum2"])
    item = get_task("sum2").item(7, 0)
    assert intake.same_model(to_batch([scored(item, [[55]])], policy.fingerprint, temperature=1.0))
    assert not intake.same_model(to_batch([scored(item, [[55]])], policy.fingerprint, temperature=0.5))
    assert not intake.same_model(to_batch([scored(item, [[55]])], "other", temperature=1.0))


def test_a_fine_tune_of_the_same_architecture_is_another_model(policy):
    """Same architecture and tokenizer (model fingerprint) but other initial weights: the sender's
    log-probs are not this policy's, so only its text counts (no behaviour log-probs)."""
    intake = make_intake(policy, tasks=["sum2"], base="base-a")
    item = get_task("sum2").item(7, 0)
    group = scored(item, [byte_ids(item.answer) + [EOS]], texts=[item.answer], logprobs=[[-0.01] * 3])
    assert intake.same_model(to_batch([group], policy.fingerprint, base="base-a"))
    other = to_batch([group], policy.fingerprint, base="base-b")
    assert not intake.same_model(other)
    result = intake.accept(other, "peer", current_version=3)
    assert not result.same_model and not result.rejected
    [taken] = result.groups
    assert taken.behavior_logprobs is None
    assert taken.completion_token_ids == [byte_ids(item.answer) + [EOS]] and taken.rewards == [1.0]
