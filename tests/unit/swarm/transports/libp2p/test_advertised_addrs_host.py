"""swarm/transports/libp2p/advertised_addrs_host.py: the host's advertised addresses are those
BasicHost computes, recomputed once ADDRS_FRESH_FOR_S have passed (on a clock the check sets), and
an empty answer (nothing listening yet) is never kept. In a fresh interpreter: py-libp2p cannot be
imported in this process beside hivemind."""
import json
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[5]

CHECK = """
import json
import multiaddr, trio
from libp2p.crypto.ed25519 import create_new_key_pair
from libp2p.crypto.x25519 import create_new_key_pair as new_x25519_key_pair
from libp2p.host.basic_host import BasicHost
from libp2p.security.noise.transport import PROTOCOL_ID, Transport as NoiseTransport
from swarmnode.swarm.transports.libp2p import advertised_addrs_host as module

now = [100.0]
computed = [0]

class CountingHost(module.AdvertisedAddrsHost):
    clock = staticmethod(lambda: now[0])

    def get_transport_addrs(self):
        computed[0] += 1
        return super().get_transport_addrs()

module.AdvertisedAddrsHost = CountingHost  # what new_advertised_addrs_host builds, in this check only
keys = create_new_key_pair()
listen = [multiaddr.Multiaddr("/ip4/127.0.0.1/tcp/0")]
host = module.new_advertised_addrs_host(keys, {PROTOCOL_ID: NoiseTransport(keys, noise_privkey=new_x25519_key_pair().private_key)},
                                        listen, None)

async def main():
    before = host.get_addrs()
    async with host.run(listen):
        first = host.get_addrs()
        start = computed[0]
        repeated = [host.get_addrs() for _ in range(50)]
        within = computed[0] - start
        now[0] += module.ADDRS_FRESH_FOR_S
        host.get_addrs()
        after = computed[0] - start
        return {"before_listening": [str(a) for a in before], "same_as_basic_host": first == BasicHost.get_addrs(host),
                "listening": bool(first), "repeated_equal": all(r == first for r in repeated),
                "computed_within": within, "computed_after": after, "a_copy": host.get_addrs() is not host.get_addrs()}

print(json.dumps(trio.run(main)))
"""


def test_advertised_addresses_are_basic_hosts_recomputed_once_they_are_stale():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", CHECK], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "before_listening": [],  # nothing listening: computed, not kept
        "same_as_basic_host": True,
        "listening": True,
        "repeated_equal": True,
        "computed_within": 0,  # 50 asks within the freshness time: none recomputed
        "computed_after": 1,  # stale: recomputed once
        "a_copy": True,  # a caller changing its list does not change the host's
    }
