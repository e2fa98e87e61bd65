"""The emulated internet behaves like the real one where it matters: homes dial out, nobody dials
in, nothing leaves 198.18.0.0/15, a cut home is cut off until healed, and nothing is left behind."""
import subprocess
import sys
import time

from swarmnode.testing.internet import namespaces as ns

PROBE = ("import socket, sys\n"
         "try:\n"
         "    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2).close(); print('open')\n"
         "except OSError as e:\n"
         "    print(type(e).__name__)\n")


def reach(internet, host, address, port) -> str:
    return internet.run(host, [sys.executable, "-c", PROBE, address, str(port)]).stdout.strip()


def listen(internet, host, port):
    return internet.popen(host, [sys.executable, "-m", "http.server", str(port), "--bind", "0.0.0.0"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_open(internet, host, address, port):
    for _ in range(50):
        if reach(internet, host, address, port) == "open":
            return
        time.sleep(0.1)
    raise AssertionError(f"{address}:{port} never opened")


def test_homes_dial_out_but_not_in_and_nothing_leaves(internet):
    boot = internet.add_public_host("boot")
    alice = internet.add_home("alice").hosts[0]
    bob = internet.add_home("bob", uplink_mbit=10).hosts[0]
    listen(internet, boot, 8000)
    listen(internet, alice, 8001)
    wait_open(internet, alice, "boot.swarm.test", 8000)  # out of a home, by name: yes
    wait_open(internet, alice, "127.0.0.1", 8001)
    assert reach(internet, bob, "boot.swarm.test", 8000) == "open"
    assert reach(internet, boot, alice.address, 8001) != "open"  # a private address: no route
    assert reach(internet, boot, alice.home.wan_address, 8001) != "open"  # the router lets nothing in
    assert reach(internet, bob, alice.home.wan_address, 8001) != "open"  # nor from another home
    assert reach(internet, alice, "198.19.255.1", 80) != "open"  # no route to anything outside the emulated links
    internet.cut(alice.home)
    assert reach(internet, alice, "boot.swarm.test", 8000) != "open"
    internet.heal(alice.home)
    wait_open(internet, alice, "boot.swarm.test", 8000)


def test_teardown_leaves_nothing_and_a_killed_run_is_cleaned_up(internet):
    internet.add_home("carol")
    names = [n for n in ns.list_namespaces() if n.startswith(f"{ns.PREFIX}{__import__('os').getpid()}-")]
    assert len(names) == 3  # core, router, host
    internet.close()
    assert not [n for n in ns.list_namespaces() if n in names]

    # A run SIGKILLed mid-way leaves its namespaces; the next Internet() deletes them.
    build = ("from swarmnode.testing.internet import Internet\n"
             "import os, time\n"
             "net = Internet(); net.add_home('dave'); print('built', flush=True); time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", build], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "built"
    proc.kill()
    proc.wait()
    left = [n for n in ns.list_namespaces() if n.startswith(f"{ns.PREFIX}{proc.pid}-")]
    assert len(left) == 3
    assert set(ns.remove_leftovers()) >= set(left)
    assert not [n for n in ns.list_namespaces() if n.startswith(f"{ns.PREFIX}{proc.pid}-")]
