"""Records written straight into the DHT by a plain hivemind client are rejected and counted."""
import os
import time

import pytest

from swarmnode.identity import NodeIdentity, SigningKey, peer_id_from_ed25519
from swarmnode.protocol import MessageKind, build_peer_record, seal
from swarmnode.protocol.generated import envelope_pb2, peer_record_pb2
from swarmnode.swarm.windows import peer_records_key, window_index
from tests.helpers import record_fields
from tests.integration.conftest import peer_ids, status_json, wait_until

SWARM = "swarmnode-local"  # configs/local.yaml
WINDOW_S = 10.0


def hostile_values(now: float) -> dict[str, tuple[str, bytes]]:
    """reason -> (subkey, value) for each kind of bad record."""
    mallory = NodeIdentity(SigningKey.generate(), SigningKey.generate(), p2p_identity_path=None)
    good = build_peer_record(mallory, record_fields(SWARM), now, 60.0)

    env = envelope_pb2.SignedEnvelope.FromString(good)
    env.signature = bytes([env.signature[0] ^ 1]) + env.signature[1:]
    bad_signature = env.SerializeToString()

    # Claims the peer id of a libp2p key Mallory does not hold; signed with her own keys.
    victim_id = peer_id_from_ed25519(SigningKey.generate().public_bytes)
    claim = peer_record_pb2.PeerRecord(
        peer_id=victim_id, public_key=mallory.public_key, peer_id_binding=mallory.bind_signing_key(),
        swarm=SWARM, timestamp=now, expires_at=now + 60.0,
    )

    class ClaimsVictim:
        peer_id = victim_id
        public_key = mallory.public_key
        sign = staticmethod(mallory.sign)

    return {
        "bad_signature": (mallory.peer_id, bad_signature),
        "key_binding": (victim_id, seal(ClaimsVictim, MessageKind.PEER_RECORD, claim)),
        # Just over the 8 KiB peer-record cap: larger values can wedge the plain client's own DHT
        # pipe (hivemind's BlockingIOError 11), which is what this swarm's size cap avoids.
        "oversized": ("oversized-value", b"\x0a" * 12_000),
        "malformed": ("garbage", os.urandom(300)),
        "subkey_mismatch": ("not-my-peer-id", good),
    }


def test_hostile_records_never_enter_peer_tables(make_swarm):
    hivemind = pytest.importorskip("hivemind")
    from hivemind.utils import get_dht_time

    swarm = make_swarm(2)
    homes = [n.home for n in swarm.nodes]
    real = [status_json(h)["peer_id"] for h in homes]
    wait_until(lambda: all(peer_ids(status_json(h)) for h in homes), timeout=30, what="the two nodes to meet")

    dht = hivemind.DHT(
        initial_peers=status_json(homes[0])["multiaddrs"], host_maddrs=["/ip4/127.0.0.1/tcp/0"],
        use_relay=False, auto_nat=False, start=True,
    )
    try:
        now = get_dht_time()
        bad = hostile_values(now)
        window = window_index(now, WINDOW_S)
        far = now + 3600.0
        def store(key, value, expiration, subkey=None):
            dht.store(key, value, expiration, subkey=subkey, return_future=True).result(timeout=30)

        for key in (peer_records_key(SWARM, window), peer_records_key(SWARM, window + 1)):  # in case the window turns
            for subkey, value in bad.values():
                store(key, value, now + 60.0, subkey=subkey)
            # Eviction attempt: garbage under node 0's own subkey, expiring long after its record.
            store(key, b"evict", far, subkey=real[0])
        store("swarmnode/elsewhere", b"x", now + 60.0)
        expected = set(bad) | {"unknown_key"}

        def counted(home):
            rejected = status_json(home)["messages"]["rejected"]
            return all(rejected.get(reason, 0) >= 1 for reason in expected) and rejected

        for home in homes:
            wait_until(lambda: counted(home), timeout=30, what="every rejection reason to be counted")
        # Long enough for node 0's record to have been replaced twice over if the eviction worked.
        time.sleep(2 * 8.0)  # records.ttl_s of configs/local.yaml
        for i, home in enumerate(homes):
            status = status_json(home)
            assert peer_ids(status) == set(real) - {status["peer_id"]}
            assert status["state"] == "running"
            assert swarm.nodes[i].process.poll() is None
    finally:
        dht.shutdown()
