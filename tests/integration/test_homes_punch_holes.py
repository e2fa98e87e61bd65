"""Hole punching on the libp2p transport, in an emulated internet: two homes behind routers that
keep source ports end up with a direct TCP connection to each other (circuit relay v2 through
the public node, then DCUtR); a third home behind a router that changes every source port gets
no punch through and shares through the public node's relay, like before. The public node also
bridges the homes' shard topics, so their announcements reach each other before any punch.
Real daemons, real NAT (iptables MASQUERADE, with --random-fully for the third)."""
from pathlib import Path

import yaml

from swarmnode.swarm.peers import short_id
from swarmnode.testing.internet import InternetNode
from tests.integration.conftest import wait_until
from tests.integration.test_nodes_behind_nat_share import PORT, accepted_from, internet_config


def model_less(config_path: Path) -> Path:
    """The same config without a model: the public node only joins and relays (less CPU)."""
    config = yaml.safe_load(config_path.read_text())
    config["model"]["name_or_path"] = None
    path = config_path.with_name("relay-only.yaml")
    path.write_text(yaml.safe_dump(config))
    return path


def test_homes_punch_through_port_keeping_nats_and_share_through_the_relay_otherwise(internet, tmp_path):
    config = internet_config(tmp_path, "libp2p")
    boot_host = internet.add_public_host("boot")
    alice_home, bob_home = internet.add_home("alice"), internet.add_home("bob")
    carol_home = internet.add_home("carol", random_ports=True)
    boot = InternetNode(internet, boot_host, tmp_path / "boot", model_less(config))
    boot.start()
    boot_id = boot.wait_ready()["peer_id"]
    join = ["--initial-peer", f"/ip4/{boot_host.address}/tcp/{PORT}/p2p/{boot_id}"]
    homes = {home.name: InternetNode(internet, home.hosts[0], tmp_path / home.name, config, args=join)
             for home in (alice_home, bob_home, carol_home)}
    for node in homes.values():
        node.start()
    ids = {name: node.wait_ready()["peer_id"] for name, node in homes.items()}
    wan = {home.name: home.wan_address for home in (alice_home, bob_home, carol_home)}

    def network(name: str) -> dict:
        return (homes[name].status() or {}).get("network") or {}

    def punched(a: str, b: str) -> bool:
        return ids[b] in network(a).get("direct_peers", [])

    wait_until(lambda: punched("alice", "bob") and punched("bob", "alice"), timeout=90, interval=2,
               what="a direct connection between alice and bob")
    # the homes' shard topics have no mesh of their own (they cannot connect to each other):
    # the public node, their relay, joins them and forwards their pushes
    assert (boot.status() or {})["network"]["counters"]["bridged_topics"] >= 1
    for a, b in (("alice", "bob"), ("bob", "alice")):
        assert network(a)["counters"]["hole_punches_succeeded"] >= 1
        # the connection goes to the other home's router, at the port its node listens on
        line = f"direct connection to {short_id(ids[b])} through NAT (hole punched): /ip4/{wan[b]}/tcp/{PORT}"
        assert line in homes[a].home.node_log.read_text()

    def carol_shares_and_tried():
        s = {name: node.status() or {} for name, node in homes.items()}
        shares = all(accepted_from(s["carol"], ids[o]) > 0 and accepted_from(s[o], ids["carol"]) > 0
                     for o in ("alice", "bob"))
        return shares and s["carol"]["network"]["counters"].get("hole_punches_tried", 0) > 0

    wait_until(carol_shares_and_tried, timeout=90, interval=3, what="carol sharing with both, a punch tried")
    carol = network("carol")
    assert carol["counters"]["hole_punches_succeeded"] == 0 and carol["direct_peers"] == []
    assert carol["counters"]["relayed_requests"] > 0
    assert not punched("alice", "carol") and not punched("bob", "carol")
    for node in homes.values():
        assert "Traceback" not in node.home.node_log.read_text()
    for node in (*homes.values(), boot):
        assert node.stop() == 0
