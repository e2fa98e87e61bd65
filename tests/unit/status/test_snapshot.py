"""status/snapshot.py: the status document's `summaries` object, and the peers' base fingerprints and
measured speeds."""
from swarmnode.protocol import build_peer_record, check_peer_record
from swarmnode.protocol.generated import peer_record_pb2
from swarmnode.status.snapshot import SUMMARIES_KEYS, empty_summaries_status, peer_to_dict
from swarmnode.swarm.peers import PeerEntry, PeerTable
from tests.unit.protocol.helpers import SPEEDS, fields
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


def test_status_peer_entries_carry_the_peers_speeds(make_identity):
    peer = make_identity()
    table = PeerTable("me")
    table.offer(check_peer_record(build_peer_record(peer, fields(**SPEEDS), 100.0, 20.0), subkey=peer.peer_id,
                                  swarm="s", now=101.0), 101.0)
    entry = peer_to_dict(table.entries()[0], now=102.0)
    expected = {"generate_tokens_per_s": 1234.6, "train_samples_per_s": 7.89, "train_tokens_per_s": 50.0,
                "seconds_per_step": 2.346}
    assert {k: entry[k] for k in expected} == expected
    assert entry["capability"] == {"matmul_gflops": 10.0, **expected}


def test_status_names_the_versions_spoken_and_the_peers_of_other_versions():
    from swarmnode.swarm.peers import IncompatiblePeer

    doc = status()
    assert (doc["protocol_version"], doc["protocol_versions"], doc["incompatible_peers"]) == (1, [1, 1], [])
    newer = IncompatiblePeer("12D3KooWNewer", (3, 4), "0.3.0", timestamp=1095.0, expires_at=1105.5)
    older = IncompatiblePeer("12D3KooWOlder", (1, 1), "0.1.0", timestamp=1095.0, expires_at=1104.0)
    doc = status(protocol_versions=(2, 2), incompatible_peers=[newer, older])
    assert doc["protocol_versions"] == [2, 2]
    assert doc["incompatible_peers"] == [
        {"peer_id": "12D3KooWNewer", "protocol_versions": [3, 4], "software_version": "0.3.0", "upgrade": "this node",
         "expires_in_s": 5.5},
        {"peer_id": "12D3KooWOlder", "protocol_versions": [1, 1], "software_version": "0.1.0", "upgrade": "peer",
         "expires_in_s": 4.0}]
