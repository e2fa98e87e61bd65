"""protocol/rollout_messages.py: signed rollout announcements (round trip, rejections, another
identity's binding) and sealed rollout batches."""
from swarmnode.identity import NodeIdentity, SigningKey
from swarmnode.protocol import build_peer_record
from swarmnode.protocol.codec import MessageKind, RejectReason, seal
from swarmnode.protocol.generated import rollout_batch_pb2
from swarmnode.protocol.rollout_messages import check_rollout_announcement, open_rollout_batch, seal_rollout_batch
from swarmnode.protocol.signed_values import age_problem
from tests.helpers import record_fields
from tests.unit.protocol.helpers import NOW, TTL, announce, forged_announcement, rejection


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
