"""Real `swarmnode run` processes write `<home>/logs/node.log`: dated lines, a start line that
says how the previous run ended (SIGKILL: not cleanly), a line when a peer joins and when it
leaves, periodic summary lines; `swarmnode logs -n 5` prints its last lines."""
import re
import signal
import subprocess
import sys

from swarmnode.node.local_swarm import LocalSwarm
from swarmnode.swarm.peers import short_id
from tests.integration.conftest import status_json, wait_until

DATED = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} (DEBUG|INFO|WARN|WARNING|ERROR) [\w.]+: ")


def lines_with(path, text: str) -> list[str]:
    return [line for line in path.read_text().splitlines() if text in line] if path.exists() else []


def test_node_log_is_dated_names_an_unclean_end_and_peers_joining_and_leaving(tmp_path, local_config):
    config = tmp_path / "c.yaml"
    config.write_text(local_config.read_text() + "\nlogging:\n  summary_interval_s: 1\n")
    swarm = LocalSwarm(tmp_path / "swarm", 2, config)
    with swarm:
        swarm.start()
        first, second = swarm.nodes
        second_id = status_json(second.home)["peer_id"]
        joined = wait_until(lambda: lines_with(first.log_path, f"peer {short_id(second_id)} joined"), timeout=30,
                            what="node0 to log node1 joining")
        assert re.search(r"joined \(swarmnode 0\.1\.0, (joining|running); 1 peer now\)$", joined[0]), joined[0]
        wait_until(lambda: lines_with(second.log_path, "summary: state running; no model; peers 1"), timeout=30,
                   what="a summary line naming the peer")
        start = lines_with(second.log_path, "swarmnode 0.1.0 starting: ")
        assert len(start) == 1 and f"config {config} with --initial-peer; home {second.home.root}; no earlier run recorded" in start[0]
        assert f"log: {second.log_path}" in second.stdout_path.read_text()  # the banner names the log

        swarm.kill(1, signal.SIGKILL)
        left = wait_until(lambda: lines_with(first.log_path, f"peer {short_id(second_id)} left"), timeout=30,
                          what="node0 to log node1 leaving")
        assert left[0].endswith("left (its record expired; 0 peers now)")
        swarm.restart(1)
        restarted = wait_until(lambda: lines_with(second.log_path, "swarmnode 0.1.0 starting: ")[1:], timeout=30,
                               what="the second start line")
        assert " WARN swarmnode: " in restarted[0]  # hivemind names WARNING so
        assert re.search(r"the previous run \(pid \d+, started [\d-]+ [\d:]+\) did not end cleanly \(killed or crashed\)$",
                         restarted[0]), restarted[0]
        wait_until(lambda: len(lines_with(first.log_path, f"peer {short_id(second_id)} joined")) == 2, timeout=30,
                   what="node0 to log node1 joining again")

    for node in swarm.nodes:
        text = node.log_path.read_text()
        assert all(DATED.match(line) for line in text.splitlines()), text
        assert "Traceback" not in text
    assert lines_with(second.log_path, "stopped")  # SIGTERM at the end: a clean stop, logged
    shown = subprocess.run([sys.executable, "-m", "swarmnode", "logs", "-n", "5", "--home", str(second.home.root)],
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and shown.stderr == ""
    assert shown.stdout.splitlines() == second.log_path.read_text().splitlines()[-5:]
