"""Two protocol versions in one swarm: the nodes skip each other, count it once, never strike, and
each log says once which side should upgrade; the DHT stays one.

Three real `swarmnode run` processes on 127.0.0.1, all training the bundled tiny policy:
- node0 and node1 speak protocol version 1 (this code) and share rollouts;
- node2 is the same code speaking versions 2-3 (swarmnode/testing/other_version.py), joined
  through node0: its records, and its rollout announcements in version 2, are kept by the DHT
  all the same, so each side still reads the other's records and names it.
"""
import pytest

from swarmnode.node.local_swarm import LocalSwarm
from swarmnode.swarm.peers import short_id
from tests.integration.conftest import status_json, wait_until

NEWER = "2:3"


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
                       node_env=lambda i: {"SWARMNODE_TEST_PROTOCOL": NEWER} if i == 2 else {},
                       node_module=lambda i: "swarmnode.testing.other_version" if i == 2 else "swarmnode")
    with swarm:
        swarm.start()
        homes = [n.home for n in swarm.nodes]
        ids = [status_json(h)["peer_id"] for h in homes]

        def settled():
            docs = [status_json(h) for h in homes]
            old_ok = all(d["rollouts"]["groups_accepted"] > 0 and d["incompatible_peers"] for d in docs[:2])
            return old_ok and len(docs[2]["incompatible_peers"]) == 2 and docs

        docs = wait_until(settled, timeout=120, interval=1.0,
                          what="node0 and node1 to exchange groups and every node to name the other version")
        for i in (0, 1):
            d, other = docs[i], ids[1 - i]
            assert d["protocol_versions"] == [1, 1]
            assert [p["peer_id"] for p in d["peers"]] == [other]  # node2 is never in the peer table
            [newer] = d["incompatible_peers"]
            assert (newer["peer_id"], newer["protocol_versions"], newer["upgrade"]) == (ids[2], [2, 3], "this node")
            # Counted once for the peer, held against no one, never struck or fetched from.
            assert d["messages"]["rejected"]["incompatible_version"] == 1
            assert d["messages"]["rejected_by_sender"][ids[2]] == {"incompatible_version": 1}
            senders = d["rollouts"]["senders"]
            assert senders[other]["accepted"] > 0 and ids[2] not in senders
            assert d["rollouts"]["peers_ignored"] == 0
        d = docs[2]
        assert d["protocol_versions"] == [2, 3] and d["peers"] == []
        assert sorted((p["peer_id"], p["protocol_versions"], p["upgrade"]) for p in d["incompatible_peers"]) == sorted(
            (pid, [1, 1], "peer") for pid in ids[:2])
        assert all(d["messages"]["rejected_by_sender"][pid] == {"incompatible_version": 1} for pid in ids[:2])
        assert d["join"]["joined"] is False and "that peer runs an older swarmnode" in d["join"]["last_error"]
        # A few more polls, records and announcements later: still counted once.
        wait_until(lambda: status_json(homes[2])["rollouts"]["announcements"] >= 2, timeout=60,
                   what="node2 to announce its rollouts (in version 2) a few times")
        later = status_json(homes[0])["messages"]
        assert later["rejected"]["incompatible_version"] == 1 and later["rejected_by_sender"][ids[2]] == {"incompatible_version": 1}

    logs = [n.log_path.read_text() for n in swarm.nodes]
    for i in (0, 1):
        said = lines_naming(logs[i], ids[2], "speaks protocol versions 2–3, this node 1–1: "
                                              "upgrade swarmnode on this node to join it")
        assert len(said) == 1, said
    older = "speaks protocol versions 1–1, this node 2–3: that peer runs an older swarmnode and should upgrade"
    assert [f"initial peer {ids[0]} {older}" in line for line in lines_naming(logs[2], ids[0], older)] == [True]
    assert len(lines_naming(logs[2], ids[1], older)) == 1
