"""protocol/signed_values.py through its callers: records and announcements claiming a lifetime over the limit."""
from swarmnode.protocol import RejectReason, build_peer_record, check_peer_record
from swarmnode.protocol.rollout_messages import build_rollout_announcement, check_rollout_announcement
from tests.helpers import record_fields
from tests.unit.protocol.helpers import rejection as reason_of

FIELDS = record_fields("s")
NOW = 1000.0


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
