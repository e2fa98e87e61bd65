"""What `swarmnode run` can check before it starts fails in one line, exit code 2, nothing left:
the line names the value and where it came from (file, environment variable, flag)."""
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from swarmnode.home import NodeHome, init_home
from tests.integration.conftest import p2pd_of


def run_node(home: NodeHome, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "swarmnode", "run", "--home", str(home.root), *args],
                          capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})})


def assert_failed_in_one_line(proc: subprocess.CompletedProcess, home: NodeHome, *expected: str) -> None:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1, proc.stderr
    assert all(text in lines[0] for text in expected), lines[0]
    assert "Traceback" not in proc.stderr + proc.stdout
    assert not home.runtime_file.exists() and not home.run_dir.exists()  # no lock, no runtime file
    assert not p2pd_of(home)


@pytest.fixture
def home(tmp_path, local_config) -> NodeHome:
    home = NodeHome(tmp_path / "home")
    init_home(home.root, local_config.read_text())
    return home


def test_unknown_task_in_the_config_file(home):
    home.config.write_text(home.config.read_text() + "training:\n  tasks: [sum4]\n")
    proc = run_node(home)
    assert_failed_in_one_line(proc, home, "unknown task 'sum4'", f"training.tasks in {home.config}")


def test_misspelt_bundled_model_from_the_environment(home):
    proc = run_node(home, env={"SWARMNODE__MODEL__NAME_OR_PATH": "bundled:tiny-polcy"})
    assert_failed_in_one_line(proc, home, "no bundled model 'tiny-polcy'",
                              "environment variable SWARMNODE__MODEL__NAME_OR_PATH", "did you mean bundled:tiny-policy?")


def test_status_port_in_use(home):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = run_node(home, "--status-port", str(port))
    assert_failed_in_one_line(proc, home, f"status port {port}", "Address already in use", "change --status-port")


def test_host_port_in_use_is_not_blamed_on_a_slow_p2pd(home):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = run_node(home, "--host-port", str(port))
    assert_failed_in_one_line(proc, home, f"p2p port {port}", "(from --host-port)")
    assert "timeout" not in proc.stderr


def test_listen_address_not_on_this_machine_is_named_not_blamed_on_p2pd(home):
    # 198.18.0.0/15 is reserved for tests and on no interface of this machine
    proc = run_node(home, env={"SWARMNODE__NETWORK__HOST_MADDRS": '["/ip4/198.18.7.7/tcp/0"]'})
    assert_failed_in_one_line(proc, home, "listen address 198.18.7.7", "is not an address of this machine",
                              "environment variable SWARMNODE__NETWORK__HOST_MADDRS")
    assert "timeout" not in proc.stderr


def test_read_only_home(home):
    if os.geteuid() == 0:  # root writes through a mode: make the folder immutable instead
        if subprocess.run(["chattr", "+i", str(home.root)], capture_output=True).returncode != 0:
            pytest.skip("chattr +i is not available here, and root ignores file modes")
        undo = ["chattr", "-i", str(home.root)]
    else:
        os.chmod(home.root, 0o500)
        undo = ["chmod", "700", str(home.root)]
    try:
        proc = run_node(home)
    finally:
        subprocess.run(undo, check=True)
    assert_failed_in_one_line(proc, home, f"node home {home.root} is not writable", "(from --home)")


def test_unknown_log_level_and_missing_config_file(home, tmp_path: Path):
    proc = run_node(home, "--log-level", "verbose")
    assert_failed_in_one_line(proc, home, "--log-level verbose: expected one of DEBUG, INFO, WARNING, ERROR")
    proc = run_node(home, "--config", str(tmp_path / "missing.yaml"))
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1
    assert f"--config {tmp_path / 'missing.yaml'}: file not found" in lines[0] and "swarmnode init" not in lines[0]


def test_damaged_node_key_names_the_file_and_the_next_step(home):
    home.node_key.write_text("-----BEGIN PRIVATE KEY-----\ngarbage\n-----END PRIVATE KEY-----\n")
    proc = run_node(home)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert f"cannot read node key {home.node_key}" in lines[0] and f"swarmnode init --home {home.root}" in lines[0]
    assert "Traceback" not in proc.stderr and not p2pd_of(home) and not home.runtime_file.exists()
