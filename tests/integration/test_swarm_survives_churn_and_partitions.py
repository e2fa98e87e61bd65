"""A swarm of a public node and two homes behind NAT, in an emulated internet, through churn and a
partition: a home SIGKILLed and restarted resumes from its checkpoint and shares again; the
public node (initial peer and relay) SIGKILLed and restarted is found again and relays again; a
home cut off for a while trains on alone and shares again after the heal. Survivors never wait.
Real daemons, real p2pd, real NAT, real SIGKILLs."""
import yaml

from swarmnode.testing.internet import InternetNode
from tests.integration.conftest import wait_until
from tests.integration.test_nodes_behind_nat_share import PORT, accepted_from, internet_config


CHECKPOINT_EVERY = 20  # early enough that the test need not wait long for bob's first checkpoint


def test_survivors_keep_training_and_everyone_shares_again(internet, tmp_path):
    config = internet_config(tmp_path)
    settings = yaml.safe_load(config.read_text())
    settings["training"]["checkpoint_every"] = CHECKPOINT_EVERY
    config.write_text(yaml.safe_dump(settings))
    boot_host = internet.add_public_host("boot")
    alice_host, bob_host = internet.add_home("alice").hosts[0], internet.add_home("bob").hosts[0]
    boot = InternetNode(internet, boot_host, tmp_path / "boot", config)
    boot.start()
    boot_id = boot.wait_ready()["peer_id"]
    join = ["--initial-peer", f"/ip4/{boot_host.address}/tcp/{PORT}/p2p/{boot_id}"]
    alice = InternetNode(internet, alice_host, tmp_path / "alice", config, args=join)
    bob = InternetNode(internet, bob_host, tmp_path / "bob", config, args=join)
    alice.start()
    bob.start()
    nodes = {"boot": boot, "alice": alice, "bob": bob}
    ids = {name: node.wait_ready()["peer_id"] for name, node in nodes.items()}

    def status(name):
        return nodes[name].status() or {}

    def steps(name):
        return (status(name).get("training") or {}).get("steps") or 0

    def shares_again(receiver, sender, since: int):
        return wait_until(lambda: accepted_from(status(receiver), ids[sender]) > since, timeout=90, interval=2,
                          what=f"{receiver} to accept new groups from {sender}")

    shares_again("alice", "bob", 0)
    shares_again("bob", "alice", 0)

    # A home dies (SIGKILL) and comes back: it resumes from its checkpoint and shares again.
    wait_until(lambda: (status("bob").get("training") or {}).get("policy_version", 0) >= CHECKPOINT_EVERY, timeout=120,
               what=f"bob's first checkpoint (checkpoint_every {CHECKPOINT_EVERY})")
    bob.kill()
    alice_steps = steps("alice")
    wait_until(lambda: steps("alice") > alice_steps + 5, timeout=30, what="alice to train on while bob is gone")
    bob.start()
    bob.wait_ready()
    resumed = wait_until(lambda: (status("bob").get("training") or {}).get("policy_version"), timeout=60,
                         what="bob's trainer to report the policy version it resumed from")
    assert resumed >= CHECKPOINT_EVERY
    from_bob = accepted_from(status("alice"), ids["bob"])
    shares_again("alice", "bob", from_bob)
    shares_again("bob", "alice", 0)  # a restarted node's counters start again

    # The initial peer and relay dies and comes back: the homes train on, then share through it again.
    boot.kill()
    alice_steps = steps("alice")
    wait_until(lambda: steps("alice") > alice_steps + 5, timeout=30, what="alice to train on while boot is gone")
    boot.start()
    boot.wait_ready()
    wait_until(lambda: status("boot")["network"]["relayed_for"], timeout=90, what="a home to reserve on boot again")
    from_bob = accepted_from(status("alice"), ids["bob"])
    shares_again("alice", "bob", from_bob)
    shares_again("boot", "alice", 0)

    # A home is cut off, trains on alone, and shares again once healed.
    internet.cut(alice_host.home)
    alice_steps = steps("alice")
    wait_until(lambda: steps("alice") > alice_steps + 5, timeout=30, what="alice to train on while cut off")
    internet.heal(alice_host.home)
    from_alice = accepted_from(status("bob"), ids["alice"])
    from_bob = accepted_from(status("alice"), ids["bob"])
    shares_again("bob", "alice", from_alice)
    shares_again("alice", "bob", from_bob)
    for name, node in nodes.items():
        code = node.stop()
        assert code == 0, f"{name} did not stop cleanly on SIGTERM within 30 s (code {code}); its log ends: {node.log_tail()}"
        assert "Traceback" not in node.home.node_log.read_text()
