"""Training that fails after start (here: a model folder whose weights are damaged, which the
checks before start cannot see) stops the node with one line and exit code 1, p2pd included;
with --keep-serving the node stays in the swarm and its status says it serves without training."""
import shutil
import signal
import subprocess
import sys
from importlib import resources
from pathlib import Path

from swarmnode.home import NodeHome, init_home
from swarmnode.status.client import NoDaemon, fetch, status_url_for_home
from tests.integration.conftest import alive, p2pd_of, wait_until


def damaged_model(tmp_path: Path) -> Path:
    folder = tmp_path / "damaged-policy"
    shutil.copytree(Path(str(resources.files("swarmnode.assets").joinpath("tiny-policy"))), folder)
    (folder / "model.safetensors").write_bytes(b"not safetensors")
    return folder


def state_of(home: NodeHome) -> dict:
    try:
        return fetch(status_url_for_home(home), "/status", timeout=2.0)
    except NoDaemon:
        return {}


def start_node(tmp_path: Path, local_config: Path, *args: str) -> tuple[NodeHome, subprocess.Popen, Path]:
    home = NodeHome(tmp_path / "home")
    init_home(home.root, local_config.read_text() + f"model:\n  name_or_path: {damaged_model(tmp_path)}\n")
    log_path = tmp_path / "node.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "swarmnode", "run", "--home", str(home.root), *args],
                                stdout=log, stderr=subprocess.STDOUT)
    return home, proc, log_path


def test_training_that_fails_after_start_stops_the_node_in_one_line(tmp_path, local_config):
    home, proc, log_path = start_node(tmp_path, local_config)
    try:
        p2pd = wait_until(lambda: p2pd_of(home), timeout=60, interval=0.1, what="p2pd started")
        assert proc.wait(timeout=120) == 1
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    lines = log_path.read_text().splitlines()
    assert "Traceback" not in log_path.read_text()
    last = lines[-1]
    assert "exiting: training failed: " in last and "\n" not in last, last
    assert any("stopping: training failed: " in line for line in lines)
    assert not any(alive(p.pid) for p in p2pd) and not p2pd_of(home)
    assert not home.runtime_file.exists()
    # The node's own log keeps the one line and, below it, the traceback the console left out.
    log = home.node_log.read_text()
    assert "ERROR swarmnode: stopping: training failed: " in log and "Traceback (most recent call last)" in log
    assert log.index("ERROR swarmnode.training: training failed\nTraceback (most recent call last)") < log.index("exiting: ")


def test_keep_serving_stays_in_the_swarm_and_says_so(tmp_path, local_config):
    home, proc, log_path = start_node(tmp_path, local_config, "--keep-serving")
    try:
        def serving() -> dict | None:
            status = state_of(home)
            return status if status.get("state") == "serving" else None

        status = wait_until(serving, timeout=120, what="status state serving")
        assert status["training"]["phase"].startswith("failed: ") and status["training"]["running"] is False
        assert proc.poll() is None, "with --keep-serving the node stays up"
        assert any("serving the swarm without training (training.keep_serving)" in line
                   for line in log_path.read_text().splitlines())
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert not p2pd_of(home)
        assert "Traceback (most recent call last)" in home.node_log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
