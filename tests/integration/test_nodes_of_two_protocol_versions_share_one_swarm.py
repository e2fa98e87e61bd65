"""Two protocol versions in one swarm: a node of the previous release (version 1, one DHT key per
window) and nodes of this one (version 2, keys spread over shards) skip each other, name each
other once, never strike, and each log says once which side should upgrade; the DHT stays one.

Three real `swarmnode run` processes on 127.0.0.1, all training the bundled tiny policy:
- node0 and node1 speak protocol version 2 (this code, sharded keys) and share rollouts;
- node2 is the same code speaking version 1 (swarmnode/testing/other_version.py), which is the
  previous release's layout too: one key per window for records and announcements. It joins
  through node0. The new nodes admit its values into the DHT and name it from the records it
  stores with them; it refuses theirs as keys it does not know and says, when its join through
  node0 does not take, that this node should upgrade.
"""
import pytest

from swarmnode.node.local_swarm import LocalSwarm
from swarmnode.swarm.peers import short_id
from tests.integration.conftest import status_json, wait_until

OLDER = "1"


@pytest.fixture
def training_config(tmp_path, local_config):
    path = tmp_path / "two-versions.yaml"
    path.write_text(
        local_config.read_text().replace("name_or_path: null", "name_or_path: bundled:tiny-policy")
        + "\ntraining:\n  local_rollouts: 4\n  external_rollouts: 4\n  external_wait_s: 1\n  samples_per_prompt: 4\n"
          "  eval_every: 1000\n  eval_size: 8\n  checkpoint_every: 1000\n  threads: 1\n"
          "\nrollouts:\n  fetch_interval_s: 0.5\n  announce_interval_s: 1\n"
          "\nsummaries:\n  enabled: false\n"
    )
    return path


def lines_naming(log_text: str, peer_id: str, advice: str) -> list[str]:
    return [line for line in log_text.splitlines() if advice in line and (peer_id in line or short_id(peer_id) in line)]


def test_nodes_of_two_protocol_versions_share_one_swarm(tmp_path, training_config):
    swarm = LocalSwarm(tmp_path / "swarm", 3, training_config,
                       node_env=lambda i: {"SWARMNODE_TEST_PROTOCOL": OLDER} if i == 2 else {},
                       node_module=lambda i: "swarmnode.testing.other_version" if i == 2 else "swarmnode")
    with swarm:
        swarm.start()
        homes = [n.home for n in swarm.nodes]
        ids = [status_json(h)["peer_id"] for h in homes]

        def settled():
            docs = [status_json(h) for h in homes]
            new_ok = all(d["rollouts"]["groups_accepted"] > 0 and d["incompatible_peers"] for d in docs[:2])
            return new_ok and docs[2]["join"]["last_error"] and docs

        docs = wait_until(settled, timeout=120, interval=1.0,
                          what="node0 and node1 to exchange groups and name node2, and node2's join to fail")
        for i in (0, 1):
            d, other = docs[i], ids[1 - i]
            assert d["protocol_versions"] == [2, 2]
            assert [p["peer_id"] for p in d["peers"]] == [other]  # node2 is never in the peer table
            [older] = d["incompatible_peers"]
            assert (older["peer_id"], older["protocol_versions"], older["upgrade"]) == (ids[2], [1, 1], "peer")
            # Counted once for the peer, held against no one, never struck or fetched from.
            assert d["messages"]["rejected"]["incompatible_version"] == 1
            assert d["messages"]["rejected_by_sender"][ids[2]] == {"incompatible_version": 1}
            senders = d["rollouts"]["senders"]
            assert senders[other]["accepted"] > 0 and ids[2] not in senders
            assert d["rollouts"]["peers_ignored"] == 0
        d = docs[2]
        assert d["protocol_versions"] == [1, 1] and d["peers"] == []
        # The previous release knows no shard keys: it refuses them as unknown keys (held against
        # no sender) and remembers whose they were to say why its join does not take.
        assert d["messages"]["rejected"].get("unknown_key", 0) > 0 and ids[0] not in d["messages"]["rejected_by_sender"]
        assert d["join"]["joined"] is False and "upgrade swarmnode on this node" in d["join"]["last_error"]
        # A few more polls, records and announcements later: still counted once.
        wait_until(lambda: status_json(homes[2])["rollouts"]["announcements"] >= 2, timeout=60,
                   what="node2 to announce its rollouts (in version 1) a few times")
        later = status_json(homes[0])["messages"]
        assert later["rejected"]["incompatible_version"] == 1 and later["rejected_by_sender"][ids[2]] == {"incompatible_version": 1}

    logs = [n.log_path.read_text() for n in swarm.nodes]
    for i in (0, 1):
        said = lines_naming(logs[i], ids[2], "speaks protocol versions 1–1, this node 2–2: "
                                              "that peer runs an older swarmnode and should upgrade")
        assert len(said) == 1, said
    newer = "speaks protocol versions 2–2, this node 1–1: upgrade swarmnode on this node to join it"
    assert [f"initial peer {ids[0]} {newer}" in line for line in lines_naming(logs[2], ids[0], newer)] == [True]
