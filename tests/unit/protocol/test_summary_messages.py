"""protocol/summary_messages.py: gradient-summary announcements, sealed summaries, their DHT
intake on summaries keys, and fuzzing of all of it (pure, no network).

Chunked top-k summaries are written by hand with numpy (tests/unit/protocol/helpers.py), exactly
as protocols/swarmnode/v1/gradient_summary.proto lays them out.
"""
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swarmnode.identity import NodeIdentity, SigningKey
from swarmnode.protocol.codec import (
    MAX_BODY_BYTES,
    MessageKind,
    Rejected,
    RejectReason,
    open_envelope,
    seal,
)
from swarmnode.protocol.generated import gradient_summary_pb2 as gs
from swarmnode.protocol.rollout_messages import build_rollout_announcement
from swarmnode.protocol.summary_messages import (
    build_summary_announcement,
    check_summary_announcement,
    open_summary,
    seal_summary,
)
from swarmnode.swarm.peers import MessageStats, PeerTable, RecordIntake
from swarmnode.swarm.gossip.summary_outbox import SummaryOutbox, parse_summary_fetch_response
from swarmnode.swarm.transports.base import StoredValue
from swarmnode.swarm.windows import rollouts_key, summaries_key
from tests.unit.protocol.helpers import BASE, _with_offset, chunked_summary, rejection

NOW = 1000.0
TTL = 30.0
def announce(identity, now=NOW, ttl=TTL, summary_id=7, base=BASE, size=1234):
    return build_summary_announcement(identity, window=33, summary_id=summary_id, base_fingerprint=base,
                                      size_bytes=size, now=now, ttl_s=ttl)


# -- announcements -----------------------------------------------------------------------------


def test_summary_announcement_round_trip(make_identity):
    a = make_identity()
    checked = check_summary_announcement(announce(a), subkey=a.peer_id, now=NOW + 1)
    m = checked.announcement
    assert checked.peer_id == a.peer_id and checked.public_key == a.public_key
    assert (m.window, m.summary_id, m.base_fingerprint, m.size_bytes) == (33, 7, BASE, 1234)
    assert (m.timestamp, m.expires_at) == (NOW, NOW + TTL)
    assert len(announce(a)) <= MAX_BODY_BYTES[MessageKind.SUMMARY_ANNOUNCEMENT]


def forged(signer, binder, peer_id=None) -> bytes:
    """A summary announcement sealed by `signer` whose peer_id_binding was made by `binder`."""
    message = gs.SummaryAnnouncement(peer_id=peer_id or signer.peer_id, window=33, summary_id=1, base_fingerprint=BASE,
                                     size_bytes=10, timestamp=NOW, expires_at=NOW + TTL,
                                     peer_id_binding=binder.bind_signing_key())
    return seal(signer, MessageKind.SUMMARY_ANNOUNCEMENT, message)


def test_summary_announcement_rejections(make_identity):
    a, b = make_identity(), make_identity()
    value = announce(a)
    r = rejection(check_summary_announcement, value, subkey=b.peer_id, now=NOW)
    assert r.reason == RejectReason.SUBKEY_MISMATCH and r.sender is None  # misplaced by anyone
    r = rejection(check_summary_announcement, value, subkey=a.peer_id, now=NOW + TTL)
    assert r.reason == RejectReason.EXPIRED and r.sender is None  # anyone can store an old value again
    r = rejection(check_summary_announcement, value, subkey=a.peer_id, now=NOW - 31)
    assert r.reason == RejectReason.FROM_FUTURE and r.sender == a.peer_id
    r = rejection(check_summary_announcement, announce(a, ttl=600.0), subkey=a.peer_id, now=NOW, max_ttl_s=120.0)
    assert r.reason == RejectReason.LIFETIME and r.sender == a.peer_id
    # Forgeries: another identity's binding, or another peer's id inside one's own envelope.
    r = rejection(check_summary_announcement, forged(a, b), subkey=a.peer_id, now=NOW)
    assert r.reason == RejectReason.KEY_BINDING and r.sender is None
    r = rejection(check_summary_announcement, forged(a, b, peer_id=b.peer_id), subkey=b.peer_id, now=NOW)
    assert r.reason == RejectReason.KEY_BINDING
    thief = NodeIdentity(SigningKey.generate(), a.p2p_key, a.p2p_identity_path)  # a node key a's libp2p key never bound
    r = rejection(check_summary_announcement, forged(thief, a, peer_id=a.peer_id), subkey=a.peer_id, now=NOW)
    assert r.reason == RejectReason.KEY_BINDING
    # A rollout announcement is not a summary announcement, and garbage is garbage.
    rollout = build_rollout_announcement(a, window=33, first_batch_id=0, last_batch_id=1, model_fingerprint="m",
                                         now=NOW, ttl_s=TTL)
    assert rejection(check_summary_announcement, rollout, subkey=a.peer_id, now=NOW).reason == RejectReason.WRONG_KIND
    assert rejection(check_summary_announcement, b"garbage", subkey=a.peer_id, now=NOW).reason == RejectReason.MALFORMED
    assert rejection(check_summary_announcement, None, subkey=a.peer_id, now=NOW).reason == RejectReason.MALFORMED


@pytest.mark.parametrize("field,value,reason", [
    ("base_fingerprint", "", RejectReason.INVALID_FIELD),
    ("base_fingerprint", "x" * 129, RejectReason.INVALID_FIELD),
    ("summary_id", 2**53, RejectReason.OUT_OF_RANGE),
    ("size_bytes", 2**63, RejectReason.OUT_OF_RANGE),
    ("window", 2**53, RejectReason.OUT_OF_RANGE),
    ("expires_at", 1e30, RejectReason.OUT_OF_RANGE),
    ("timestamp", float("nan"), RejectReason.INVALID_FIELD),
])
def test_summary_announcement_fields_are_checked(make_identity, field, value, reason):
    a = make_identity()
    message = gs.SummaryAnnouncement.FromString(open_envelope(announce(a), MessageKind.SUMMARY_ANNOUNCEMENT).message
                                                .SerializeToString())
    setattr(message, field, value)
    r = rejection(check_summary_announcement, seal(a, MessageKind.SUMMARY_ANNOUNCEMENT, message), subkey=a.peer_id, now=NOW)
    assert r.reason == reason


# -- sealed summaries --------------------------------------------------------------------------


def test_seal_and_open_summary(make_identity):
    a, b = make_identity(), make_identity()
    data = seal_summary(a, chunked_summary())
    summary, size = open_summary(data, served_by=a.peer_id, public_key=a.public_key)
    assert summary == chunked_summary() and size == len(data)
    r = rejection(open_summary, data, served_by=b.peer_id, public_key=a.public_key)  # relayed by b
    assert r.reason == RejectReason.SENDER_MISMATCH and r.sender == b.peer_id
    r = rejection(open_summary, data, served_by=a.peer_id, public_key=b.public_key)  # not the announced key
    assert r.reason == RejectReason.KEY_BINDING and r.sender == a.peer_id
    r = rejection(open_summary, b"\xff\xff", served_by=a.peer_id, public_key=a.public_key)
    assert r.reason == RejectReason.MALFORMED and r.sender == a.peer_id  # the authenticated stream names the sender
    bad = seal(a, MessageKind.GRADIENT_SUMMARY, _with_offset(0, 16))
    r = rejection(open_summary, bad, served_by=a.peer_id, public_key=a.public_key)
    assert r.reason == RejectReason.INVALID_FIELD and r.sender == a.peer_id
    r = rejection(open_summary, announce(a), served_by=a.peer_id, public_key=a.public_key)
    assert r.reason == RejectReason.WRONG_KIND


# -- DHT intake of summary announcements (swarm/peers.py RecordIntake) --------------------------


def test_intake_admits_summary_announcements_on_summaries_keys(make_identity):
    me, peer, other = make_identity(), make_identity(), make_identity()
    stats = MessageStats()
    intake = RecordIntake(PeerTable(me.peer_id), stats, "s", window_s=10.0)
    keys = intake.known_keys(NOW + 5)  # window 100
    assert [k for k in keys if "/summaries/" in k] == [summaries_key("s", w) for w in (98, 99, 100, 101)]
    assert summaries_key("s", 100) == "swarmnode/s/summaries/100"
    key = summaries_key("s", 100)
    value = announce(peer)
    assert intake.admit(key, peer.peer_id, value, expiration=NOW + TTL, now=NOW + 1)
    assert intake.admit(key, peer.peer_id, value, expiration=NOW + TTL, now=NOW + 1)  # cached verdict
    assert not intake.admit(key, peer.peer_id, forged(peer, other), expiration=NOW + TTL, now=NOW + 1)
    assert not intake.admit(key, other.peer_id, value, expiration=NOW + TTL, now=NOW + 1)
    assert not intake.admit(key, peer.peer_id, value, expiration=NOW + 3600, now=NOW + 1)
    # Each kind only under its own key.
    rollout = build_rollout_announcement(peer, window=33, first_batch_id=0, last_batch_id=1, model_fingerprint="m",
                                         now=NOW, ttl_s=TTL)
    assert not intake.admit(key, peer.peer_id, rollout, expiration=NOW + TTL, now=NOW + 1)
    assert not intake.admit(rollouts_key("s", 100), peer.peer_id, value, expiration=NOW + TTL, now=NOW + 1)
    assert stats.rejected == {"key_binding": 1, "subkey_mismatch": 1, "dht_expiration": 1, "wrong_kind": 2}
    assert stats.rejected_by_sender["unverified"]["key_binding"] == 1
    assert peer.peer_id not in stats.rejected_by_sender


def test_intake_summary_announcements_keeps_valid_ones_of_others(make_identity):
    me, a, b = make_identity(), make_identity(), make_identity()
    stats = MessageStats()
    intake = RecordIntake(PeerTable(me.peer_id), stats, "s", window_s=10.0)
    values = [
        StoredValue(a.peer_id, announce(a), NOW + TTL),
        StoredValue(me.peer_id, announce(me), NOW + TTL),  # own: skipped, not rejected
        StoredValue(b.peer_id, forged(b, a), NOW + TTL),
        StoredValue("x", b"garbage", NOW + TTL),
    ]
    for _ in range(3):  # polls of the same contents: each bad value counted once
        got = intake.summary_announcements(values, now=NOW + 1)
        assert [x.peer_id for x in got] == [a.peer_id] and got[0].announcement.summary_id == 7
    assert stats.rejected == {"key_binding": 1, "malformed": 1}


def test_summaries_key_holds_at_most_max_values_per_key(make_identity):
    first, second, third = make_identity(), make_identity(), make_identity()
    intake = RecordIntake(PeerTable("self"), MessageStats(), "s", window_s=10.0, max_values_per_key=2)
    key = summaries_key("s", 100)
    assert intake.admit(key, first.peer_id, announce(first), NOW + TTL, NOW + 1)
    assert intake.admit(key, second.peer_id, announce(second), NOW + TTL, NOW + 1)
    assert not intake.admit(key, third.peer_id, announce(third), NOW + TTL, NOW + 1)
    assert intake.admit(key, first.peer_id, announce(first, now=NOW + 1, summary_id=8), NOW + TTL + 1, NOW + 1)
    assert intake.values_over_key_cap == 1


# -- fuzz --------------------------------------------------------------------------------------

IDENTITY = NodeIdentity(SigningKey.generate(), SigningKey.generate(), p2p_identity_path=None)  # type: ignore[arg-type]
ANNOUNCEMENT = announce(IDENTITY)
SEALED = seal_summary(IDENTITY, chunked_summary())
OUTBOX = SummaryOutbox(capacity=1)
OUTBOX.add(7, SEALED)


def _only_rejected(data: bytes) -> None:
    try:
        check_summary_announcement(data, subkey=IDENTITY.peer_id, now=NOW + 1)
    except Rejected:
        pass
    try:
        open_summary(data, served_by=IDENTITY.peer_id, public_key=IDENTITY.public_key)
    except Rejected:
        pass
    envelope = parse_summary_fetch_response(data)
    assert envelope is None or isinstance(envelope, bytes)
    assert parse_summary_fetch_response(OUTBOX.answer(data)) in (b"", SEALED)


@st.composite
def mutated(draw):
    data = bytearray(draw(st.sampled_from([ANNOUNCEMENT, SEALED])))
    for _ in range(draw(st.integers(1, 6))):
        pos = draw(st.integers(0, max(0, len(data) - 1)))
        op = draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
        if op == "flip" and data:
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete" and data:
            del data[pos: pos + draw(st.integers(1, 8))]
        elif op == "truncate":
            data = data[:pos]
    return bytes(data)


FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


@FUZZ
@given(st.binary(max_size=2048))
def test_random_bytes_only_rejected(data):
    _only_rejected(data)


@FUZZ
@given(mutated())
def test_mutated_announcements_and_summaries_only_rejected(data):
    _only_rejected(data)


@FUZZ
@given(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1), st.lists(st.integers(0, 2**32 - 1), max_size=8))
def test_signed_summaries_with_arbitrary_chunking_only_rejected(chunk_size, per_chunk, shape):
    s = chunked_summary()
    s.chunk_size, s.per_chunk = chunk_size, per_chunk
    s.tensors[0].shape[:] = shape
    try:
        body = seal(IDENTITY, MessageKind.GRADIENT_SUMMARY, s)
    except ValueError:
        return
    try:
        open_summary(body, served_by=IDENTITY.peer_id, public_key=IDENTITY.public_key)
    except Rejected:
        pass
