"""swarm/transports/hivemind/validator.py PolicyValidator: hivemind sees only a key's hash; the
validator names a one-per-window key from a table of hashes and a shard's key by hashing the
names the value itself may sit under (RecordIntake.candidate_keys), and refuses any other."""
import time

from hivemind.dht.routing import DHTID
from hivemind.dht.validation import DHTRecord
from hivemind.utils.serializer import MSGPackSerializer

from swarmnode.protocol import build_peer_record
from swarmnode.protocol.versions import ProtocolVersions
from swarmnode.swarm.peers import MessageStats, PeerTable, RecordIntake
from swarmnode.swarm.shards import shard_of
from swarmnode.swarm.transports.hivemind.validator import PolicyValidator
from swarmnode.swarm.windows import peer_records_key, peer_records_shard_key, window_index
from tests.helpers import record_fields

WINDOW_S = 600.0  # long windows: the test's clock stays in one (or crosses one boundary, which is still near)
TTL = 30.0


def dht_record(key_name: str, peer_id: str, value: bytes, expiration: float) -> DHTRecord:
    return DHTRecord(key=DHTID.generate(source=key_name).to_bytes(), subkey=MSGPackSerializer.dumps(peer_id),
                     value=MSGPackSerializer.dumps(value), expiration_time=expiration)


def intake_and_record(make_identity, versions=None):
    peer = make_identity()
    stats = MessageStats()
    kwargs = {} if versions is None else {"versions": versions}
    intake = RecordIntake(PeerTable("self"), stats, "s", window_s=WINDOW_S, **kwargs)
    now = time.time()  # validate() judges at hivemind's get_dht_time(), the wall clock
    return peer, stats, intake, build_peer_record(peer, record_fields("s"), now, TTL), window_index(now, WINDOW_S), now


def test_the_validator_names_a_shard_key_from_the_value_and_refuses_made_up_keys(make_identity):
    peer, stats, intake, record, window, now = intake_and_record(make_identity)
    validator = PolicyValidator(intake)
    own = shard_of(peer.peer_id, 1)
    assert validator.validate(dht_record(peer_records_shard_key("s", window, 0, 0), peer.peer_id, record, now + TTL))
    assert validator.validate(dht_record(peer_records_shard_key("s", window, 1, own), peer.peer_id, record, now + TTL))
    assert validator.validate(dht_record(peer_records_key("s", window), peer.peer_id, record, now + TTL))
    assert stats.rejected == {}
    # A key none of the value's names hashes to: unknown, counted once per key and value.
    made_up = dht_record("swarmnode/s/sharded/peers/made-up", peer.peer_id, record, now + TTL)
    assert not validator.validate(made_up)
    assert not validator.validate(made_up)
    assert stats.rejected == {"unknown_key": 1}
    # The other shard at bits 1, or another window: not among the value's names either.
    assert not validator.validate(dht_record(peer_records_shard_key("s", window, 1, 1 - own), peer.peer_id, record,
                                             now + TTL))
    assert not validator.validate(dht_record(peer_records_shard_key("s", window + 1, 0, 0), peer.peer_id, record,
                                             now + TTL))
    assert stats.rejected == {"unknown_key": 3}


def test_a_node_of_one_key_per_window_knows_no_shard_keys(make_identity):
    peer, stats, intake, record, window, now = intake_and_record(make_identity, ProtocolVersions(1, 1))
    validator = PolicyValidator(intake)
    assert not validator.validate(dht_record(peer_records_shard_key("s", window, 0, 0), peer.peer_id, record, now + TTL))
    assert stats.rejected == {"unknown_key": 1}
    assert validator.validate(dht_record(peer_records_key("s", window), peer.peer_id, record, now + TTL))


class CountingPolicy:
    """A policy that admits every value under its one known key, counts what it is asked, and
    whose known key moves when told (a new window)."""

    def __init__(self):
        self.key, self.admitted, self.refused = "k/1", 0, 0

    def known_keys(self, now):
        return [self.key]

    def candidate_keys(self, subkey, value, expiration, now):
        return []

    def admit(self, key, subkey, value, expiration, now):
        self.admitted += 1
        return value != "bad"

    def refuse_unknown_key(self, key_id, value):
        self.refused += 1


def test_a_verdict_is_kept_for_the_same_entry_until_the_known_keys_change():
    policy = CountingPolicy()
    validator = PolicyValidator(policy)
    good = dht_record("k/1", "peer", b"good", 100.0)
    bad = DHTRecord(key=good.key, subkey=good.subkey, value=MSGPackSerializer.dumps("bad"), expiration_time=100.0)
    # The same entry from each of a key's 5 holders: judged once, its verdict kept, good or bad.
    assert [validator.validate(good) for _ in range(5)] == [True] * 5
    assert [validator.validate(bad) for _ in range(5)] == [False] * 5
    assert (policy.admitted, validator.judged, validator.decided) == (2, 10, 2)
    # Anything else about the entry is another entry: a later expiration, another subkey or key.
    later = DHTRecord(key=good.key, subkey=good.subkey, value=good.value, expiration_time=101.0)
    other_peer = dht_record("k/1", "other", b"good", 100.0)
    assert validator.validate(later) and validator.validate(other_peer)
    assert not validator.validate(dht_record("k/2", "peer", b"good", 100.0))  # an unknown key
    assert (policy.admitted, policy.refused, validator.decided) == (4, 1, 5)
    # A new window: the known keys change and every entry is judged afresh.
    policy.key = "k/2"
    assert not validator.validate(good) and validator.validate(dht_record("k/2", "peer", b"good", 100.0))
    assert (policy.refused, validator.decided) == (2, 7)
