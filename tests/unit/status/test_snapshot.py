"""status/snapshot.py: the status document's `summaries` object and the peers' base fingerprints."""
from swarmnode.protocol.generated import peer_record_pb2
from swarmnode.status.snapshot import SUMMARIES_KEYS, empty_summaries_status
from swarmnode.swarm.peers import PeerEntry
from tests.unit.status.helpers import SUMMARIES, status


def test_a_node_without_a_model_reports_every_summaries_key_empty():
    doc = status()["summaries"]
    assert doc == empty_summaries_status() and tuple(doc) == SUMMARIES_KEYS
    assert (doc["enabled"], doc["active"], doc["sent"], doc["rejected"], doc["bytes_per_summary"]) == (False, False, 0, {}, None)
    assert status(summaries=SUMMARIES)["summaries"] == SUMMARIES
    assert set(SUMMARIES) == set(SUMMARIES_KEYS)
    partial = status(summaries={"enabled": True, "sent": 3})["summaries"]  # missing keys are filled, not dropped
    assert tuple(partial) == SUMMARIES_KEYS and (partial["sent"], partial["merged"]) == (3, 0)


def test_peers_carry_their_base_fingerprint():
    record = peer_record_pb2.PeerRecord(peer_id="12D3KooWPeer", timestamp=1090.0, expires_at=1110.0,
                                        base_fingerprint="0123456789abcdef")
    old = peer_record_pb2.PeerRecord(peer_id="12D3KooWOld", timestamp=1090.0, expires_at=1110.0)
    peers = status(peers=[PeerEntry(record, 1000.0, 1090.0), PeerEntry(old, 1000.0, 1090.0)])["peers"]
    assert [p["base_fingerprint"] for p in peers] == ["0123456789abcdef", ""]
