"""The checks before start: each problem one line naming the value, its source and the fix."""
import errno
import socket
from pathlib import Path

from swarmnode.config import load_config_with_sources
from swarmnode.node.preflight import MIN_FREE_BYTES, StartFacts, probe_start, start_problems, tcp_listen_address


def config_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return path


def problems_for(tmp_path, text, environ=None, overrides=None, flags=None, facts=None):
    cfg, sources = load_config_with_sources(config_file(tmp_path, text), overrides, environ=environ or {}, flags=flags)
    facts = facts if facts is not None else probe_start(cfg, tmp_path)
    return start_problems(cfg, facts, sources, tmp_path, "--home")


def test_a_good_config_has_no_problems(tmp_path):
    assert problems_for(tmp_path, "model:\n  name_or_path: bundled:tiny-policy\n") == []


def test_unknown_task_names_the_file_and_key(tmp_path):
    [line] = problems_for(tmp_path, "training:\n  tasks: [sum2, sum4]\n")
    assert "unknown task 'sum4'" in line and f"training.tasks in {tmp_path / 'c.yaml'}" in line and "\n" not in line


def test_unknown_task_from_the_environment_names_the_variable(tmp_path):
    [line] = problems_for(tmp_path, "", environ={"SWARMNODE__TRAINING__TASKS": "[sum4]"})
    assert "unknown task 'sum4'" in line and "environment variable SWARMNODE__TRAINING__TASKS" in line
    assert "c.yaml" not in line


def test_misspelt_bundled_model_gets_the_close_name(tmp_path):
    [line] = problems_for(tmp_path, "model:\n  name_or_path: bundled:tiny-polcy\n")
    assert "no bundled model 'tiny-polcy'" in line and "did you mean bundled:tiny-policy?" in line
    assert "model.name_or_path in" in line


def test_missing_model_folder_and_bad_hub_id(tmp_path):
    [line] = problems_for(tmp_path, f"model:\n  name_or_path: {tmp_path / 'nope'}\n")
    assert "model folder" in line and "does not exist" in line
    (tmp_path / "empty").mkdir()
    [line] = problems_for(tmp_path, f"model:\n  name_or_path: {tmp_path / 'empty'}\n")
    assert "has no config.json" in line
    [line] = problems_for(tmp_path, "model:\n  name_or_path: a//b\n")
    assert "neither a folder nor a hub id" in line


def test_hub_id_offline_must_be_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    [line] = problems_for(tmp_path, "model:\n  name_or_path: someone/not-downloaded\n")
    assert "not in the local Hugging Face cache" in line


def test_status_port_in_use_names_the_flag(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        [line] = problems_for(tmp_path, "", overrides={"status.port": port}, flags={"status.port": "--status-port"})
    assert f"status port {port}" in line and "(from --status-port)" in line and "change --status-port" in line


def test_host_port_in_use_is_named_as_a_port_not_a_timeout(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        [line] = problems_for(tmp_path, f"network:\n  host_maddrs: [/ip4/127.0.0.1/tcp/{port}]\n")
    assert f"p2p port {port}" in line and "network.host_maddrs in" in line and "timeout" not in line


def test_unwritable_home_names_the_path_and_cause(tmp_path):
    error = OSError(errno.EROFS, "Read-only file system", str(tmp_path))
    [line] = problems_for(tmp_path, "", facts=StartFacts(home_write_error=error))
    assert f"node home {tmp_path} is not writable: Read-only file system (from --home)" in line


def test_full_disk_and_missing_gpu(tmp_path):
    [line] = problems_for(tmp_path, "", facts=StartFacts(free_bytes=MIN_FREE_BYTES // 4))
    assert "MiB free on the disk of node home" in line
    [line] = problems_for(tmp_path, "model:\n  name_or_path: bundled:tiny-policy\n  device: cuda:1\n",
                          facts=StartFacts(cuda_devices=1))
    assert "model.device is cuda:1 but torch sees only 1 CUDA GPU(s)" in line


def test_tcp_listen_address():
    assert tcp_listen_address("/ip4/0.0.0.0/tcp/31337") == ("0.0.0.0", 31337)
    assert tcp_listen_address("/ip4/0.0.0.0/tcp/0") == ("0.0.0.0", 0)
    assert tcp_listen_address("/ip4/0.0.0.0/udp/5/quic") is None


def test_cuda_shortfall_by_hand():
    from swarmnode.node.preflight import cuda_shortfall

    assert cuda_shortfall("cuda", 0) == "torch sees no CUDA GPU"
    assert cuda_shortfall("cuda:1", 1) == "torch sees only 1 CUDA GPU(s)"
    assert cuda_shortfall("cuda", 1) is None and cuda_shortfall("cuda:1", 2) is None


def test_a_listen_address_not_on_this_machine_is_named_before_p2pd_starts(tmp_path):
    # 198.18.0.0/15 is for tests and on no interface here: binding it fails with EADDRNOTAVAIL.
    [line] = problems_for(tmp_path, "network:\n  host_maddrs: [/ip4/198.18.7.7/tcp/0]\n")
    assert "listen address 198.18.7.7 (/ip4/198.18.7.7/tcp/0) is not an address of this machine" in line
    assert "network.host_maddrs" in line and "timeout" not in line
