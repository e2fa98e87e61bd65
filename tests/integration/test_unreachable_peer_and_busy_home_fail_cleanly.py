"""An unreachable initial peer: one line per failed attempt, backoff, no traceback, clean stop."""
import re
import signal
import socket
import subprocess
import sys

import yaml

from swarmnode.home import NodeHome, init_home
from swarmnode.utils.backoff import backoff_delay
from swarmnode.swarm.peers import short_address
from swarmnode.identity import SigningKey, peer_id_from_ed25519
from tests.integration.conftest import alive, child_pids, status_json, wait_until


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_initial_peer_is_retried_with_one_line_per_attempt(tmp_path, local_config):
    home = NodeHome(tmp_path / "home")
    init_home(home.root, local_config.read_text())
    ghost = f"/ip4/127.0.0.1/tcp/{closed_port()}/p2p/{peer_id_from_ed25519(SigningKey.generate().public_bytes)}"
    log_path = tmp_path / "node.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "swarmnode", "run", "--home", str(home.root), "--initial-peer", ghost],
            stdout=log, stderr=subprocess.STDOUT,
        )
    try:
        # the address and the short peer id, not the whole multiaddr: a retry line stays short
        attempt_line = re.compile(r"join attempt (\d+): (\S+ \(\S+\)) ([^;]+)(; check .+)?; retrying in ([\d.]+)s")
        attempts = wait_until(
            lambda: [m for m in map(attempt_line.search, log_path.read_text().splitlines()) if m][2:] and
            [m for m in map(attempt_line.search, log_path.read_text().splitlines()) if m],
            timeout=60, what="three failed join attempts in the log",
        )
        assert [int(m.group(1)) for m in attempts[:3]] == [1, 2, 3]
        assert all(m.group(2) == short_address(ghost) for m in attempts), (short_address(ghost), attempts[0].group(2))
        assert all(len(m.group(0)) < 160 for m in attempts[1:]), [m.group(0) for m in attempts]
        delays = [float(m.group(5)) for m in attempts[:3]]
        assert attempts[0].group(4) and not any(m.group(4) for m in attempts[1:])  # the advice once
        assert len({m.group(3) for m in attempts}) == 1, "one stable reason across retries"
        # Backoff grows, jittered: retry k waits between half and all of min(max, initial * 2**(k-1)),
        # printed to 0.1 s. Two neighbours' ranges touch (0.25-0.5 s, then 0.5-1 s), so only the
        # ranges are checked, and the third retry must wait longer than the first.
        net = yaml.safe_load(local_config.read_text())["network"]
        for k, delay in enumerate(delays, start=1):
            full = backoff_delay(k, net["join_backoff_initial_s"], net["join_backoff_max_s"])
            assert full / 2 - 0.05 <= delay <= full + 0.05, (k, delay, full)
        assert delays[2] > delays[0], delays
        status = status_json(home)
        assert status["join"]["joined"] is False and status["join"]["attempts"] >= 3
        assert status["join"]["last_error"]
        assert proc.poll() is None, "the daemon must keep running while it cannot join"
        p2pd = child_pids(home)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert not any(alive(pid) for pid in p2pd)
        assert "Traceback" not in log_path.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_second_daemon_on_same_home_is_refused(make_swarm):
    swarm = make_swarm(1)
    home = swarm.nodes[0].home
    proc = subprocess.run(
        [sys.executable, "-m", "swarmnode", "run", "--home", str(home.root), "--config", str(swarm.config_path)],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 1
    assert "another swarmnode daemon" in proc.stderr and "Traceback" not in proc.stderr
    assert swarm.nodes[0].process.poll() is None
