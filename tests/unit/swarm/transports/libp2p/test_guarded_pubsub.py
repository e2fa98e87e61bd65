"""swarm/transports/libp2p/guarded_pubsub.py, on real py-libp2p hosts over 127.0.0.1 (in a fresh
interpreter: bad_pubsub_peer.py): a peer's frame that is not a pubsub RPC ends that peer's stream
and is counted; the node's pubsub service runs on and serves the peer's next stream. With
py-libp2p's Pubsub the same frame stopped the service, and with it the node."""
import json
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[5]


def test_a_frame_that_is_not_an_rpc_ends_one_stream_not_the_node():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-m", "tests.unit.swarm.transports.libp2p.bad_pubsub_peer"], cwd=REPO_ROOT,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"running": True, "bad_rpc_streams": 1, "second_stream_served": True}, result
