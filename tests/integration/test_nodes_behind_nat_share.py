"""Two homes behind NAT routers and one public node, in an emulated internet: every pair of
nodes exchanges rollouts and gradient summaries, the homes through the public node's relay;
each node gives out only addresses others can use. Real daemons, real p2pd, real NAT."""
from pathlib import Path

import yaml

from swarmnode.testing.internet import InternetNode
from tests.integration.conftest import wait_until

PORT = 31337


def internet_config(tmp_path: Path, transport: str = "hivemind") -> Path:
    config = yaml.safe_load(Path("configs/local-train.yaml").read_text())
    config["network"]["host_maddrs"] = [f"/ip4/0.0.0.0/tcp/{PORT}"]
    config["network"]["transport"] = transport
    path = tmp_path / "internet.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def accepted_from(status: dict, peer_id: str) -> int:
    return (((status.get("rollouts") or {}).get("senders") or {}).get(peer_id) or {}).get("accepted", 0)


def judged_from(status: dict, peer_id: str) -> int:
    return ((status["summaries"].get("trust") or {}).get(peer_id) or {}).get("judged", 0)


def test_every_pair_shares_rollouts_and_summaries_across_nat(internet, tmp_path):
    # hivemind here; libp2p behind NAT (relays, and hole punching where it can) is
    # test_homes_punch_holes.py, which also shows a home sharing through the relay alone.
    config = internet_config(tmp_path)
    boot_host = internet.add_public_host("boot")
    alice_host = internet.add_home("alice").hosts[0]
    bob_host = internet.add_home("bob", uplink_mbit=20).hosts[0]
    boot = InternetNode(internet, boot_host, tmp_path / "boot", config)
    boot.start()
    boot_id = boot.wait_ready()["peer_id"]
    # one home joins by IP, the other by name (/dns4, resolved inside the emulated internet)
    by_ip = f"/ip4/{boot_host.address}/tcp/{PORT}/p2p/{boot_id}"
    by_name = f"/dns4/{boot_host.dns_name}/tcp/{PORT}/p2p/{boot_id}"
    alice = InternetNode(internet, alice_host, tmp_path / "alice", config, args=["--initial-peer", by_ip])
    bob = InternetNode(internet, bob_host, tmp_path / "bob", config, args=["--initial-peer", by_name])
    nodes = {"boot": boot, "alice": alice, "bob": bob}
    alice.start()
    bob.start()
    ids = {name: node.wait_ready()["peer_id"] for name, node in nodes.items()}

    def statuses():
        return {name: node.status() or {} for name, node in nodes.items()}

    def reachability_known():
        s = statuses()
        return (s["boot"]["network"]["reachability"] == "public"
                and all(s[h]["network"]["reachability"] == "private" and s[h]["network"]["relays"] for h in ("alice", "bob")))

    wait_until(reachability_known, timeout=60, what="boot public, both homes private with a relay")
    s = statuses()
    assert s["boot"]["multiaddrs"] == [by_ip]  # where peers reached it, nothing else
    assert s["alice"]["multiaddrs"] == [] and s["bob"]["multiaddrs"] == []  # nothing a stranger could dial
    assert s["alice"]["network"]["observed_ip"] == alice_host.home.wan_address
    assert s["alice"]["network"]["relays"] == [boot_id] and s["bob"]["network"]["relays"] == [boot_id]

    def every_pair_shares():
        s = statuses()
        return all(accepted_from(s[a], ids[b]) > 0 for a in nodes for b in nodes if a != b)

    wait_until(every_pair_shares, timeout=90, interval=3, what="groups between every pair of nodes")

    def homes_exchange_summaries():
        s = statuses()
        return judged_from(s["alice"], ids["bob"]) > 0 and judged_from(s["bob"], ids["alice"]) > 0

    wait_until(homes_exchange_summaries, timeout=120, interval=3, what="summaries between the two homes")
    s = statuses()
    assert s["boot"]["network"]["counters"]["forwarded"] > 0 and len(s["boot"]["network"]["relayed_for"]) == 2
    assert s["alice"]["network"]["counters"]["relayed_requests"] > 0
    home_log = alice.home.node_log.read_text()
    assert "peers cannot dial this node" in home_log and "forward TCP 31337" in home_log
    assert "Traceback" not in home_log
    for node in nodes.values():
        assert node.stop() == 0
