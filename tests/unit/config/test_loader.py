"""config/loader.py and config/model.py: the bundled configs, precedence, one-line errors (also from the CLI),
and defaults."""
import subprocess
import sys

import pytest

from swarmnode.config import (
    ConfigError,
    NodeConfig,
    bundled_config_path,
    default_config_text,
    load_config,
    load_config_with_sources,
)
from swarmnode.config.model import SummariesConfig


def write(tmp_path, text):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return path


def test_bundled_configs_load():
    assert load_config(bundled_config_path("default.yaml"), environ={}).swarm.name == "swarmnode-public"
    assert load_config(bundled_config_path("local.yaml"), environ={}).network.host_maddrs == ["/ip4/127.0.0.1/tcp/0"]
    assert "swarm:" in default_config_text()


def test_initial_peers_take_dns_and_ip_addresses():
    peers = ["/dns4/boot1.example.org/tcp/7100/p2p/12D3KooWA", "/ip4/203.0.113.7/tcp/7100/p2p/12D3KooWB"]
    assert load_config(None, {"swarm.initial_peers": peers}, environ={}).swarm.initial_peers == peers


def test_precedence_file_env_overrides(tmp_path):
    path = write(tmp_path, "records:\n  ttl_s: 30\nnetwork:\n  client_mode: false\n")
    cfg = load_config(path, {"records.ttl_s": 40}, environ={"SWARMNODE__NETWORK__CLIENT_MODE": "true", "SWARMNODE__RECORDS__TTL_S": "35"})
    assert cfg.network.client_mode is True
    assert cfg.records.ttl_s == 40


@pytest.mark.parametrize(
    "text, expected",
    [
        ("swarm:\n  nmae: x\n", "unknown field 'swarm.nmae'; did you mean 'name'?"),
        ("records:\n  ttl_s: soon\n", "records.ttl_s:"),
        ("status:\n  port: 70000\n", "status.port:"),
        ("swarm:\n  initial_peers: ['/ip4/127.0.0.1/tcp/5']\n", "no /p2p/<peer id> part"),
        ("swarm:\n  initial_peers: ['/dns4/boot1.example.org/tcp/7100/p2p/']\n", "no /p2p/<peer id> part"),
        ("swarm: [\n", "not valid YAML"),
        ("- a\n- b\n", "top level must be a mapping"),
        ("training:\n  generator: fork\n", "training.generator:"),
        ("model:\n  backend: vllm\ntraining:\n  generator: process\n", "set training.generator: thread"),
        ("model:\n  device: mps\ntraining:\n  generator: process\n", "process runs the hf backend on cpu or cuda"),
        ("records:\n  ttl_s: 600\n", "records.ttl_s (600s) is over limits.max_record_ttl_s (120s)"),
        ("rollouts:\n  announce_ttl_s: 30\nlimits:\n  max_record_ttl_s: 20\n", "rollouts.announce_ttl_s (30s) is over"),
        ("limits:\n  serve_requests_per_s: 0\n", "limits.serve_requests_per_s:"),
        ("storage:\n  max_checkpoint_failures: 0\n", "storage.max_checkpoint_failures:"),
        ("summaries:\n  every_steps: 0\n", "summaries.every_steps: Input should be greater than or equal to 1 (got 0)"),
        ("summaries:\n  bits: 3\n", "summaries.bits: Input should be 2, 4 or 8 (got 3)"),
        ("summaries:\n  outer_momentum: 1.0\n", "summaries.outer_momentum: Input should be less than 1 (got 1.0)"),
        ("summaries:\n  density: 0\n", "summaries.density: Input should be greater than 0 (got 0)"),
        ("summaries:\n  density: 0.6\n", "summaries.density:"),
        ("summaries:\n  chunk_size: 32\n", "summaries.chunk_size:"),
        ("summaries:\n  partners_per_step: 0\n", "summaries.partners_per_step:"),
        ("summaries:\n  density: 0.001\n  chunk_size: 512\n", "summaries.density (0.001) x summaries.chunk_size (512) sends no entry"),
        ("summaries:\n  enabeld: false\n", "unknown field 'summaries.enabeld'; did you mean 'enabled'?"),
        ("summaries:\n  announce_ttl_s: 300\n", "summaries.announce_ttl_s (300s) is over limits.max_record_ttl_s (120s)"),
        ("limits:\n  summary_max_norm_ratio: 1\n", "limits.summary_max_norm_ratio:"),
        ("limits:\n  max_summary_bytes: 100\n", "limits.max_summary_bytes:"),
        ("training:\n  slowdown: 0.5\n", "training.slowdown: Input should be greater than or equal to 1 (got 0.5)"),
        ("training:\n  slowdown: .nan\n", "training.slowdown: Input should be a finite number"),
        ("training:\n  slowdown: .inf\n", "training.slowdown:"),
        ("training:\n  slowdown: fast\n", "training.slowdown:"),
        ("logging:\n  max_bytes: 100\n", "logging.max_bytes: Input should be greater than or equal to 1024 (got 100)"),
        ("logging:\n  backup_count: 0\n", "logging.backup_count: Input should be greater than or equal to 1 (got 0)"),
        ("logging:\n  summary_interval_s: 0\n", "logging.summary_interval_s: Input should be greater than 0 (got 0)"),
        ("logging:\n  max_byte: 2048\n", "unknown field 'logging.max_byte'; did you mean 'max_bytes'?"),
    ],
)
def test_errors_are_one_line_naming_the_field(tmp_path, text, expected):
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text), environ={})
    message = str(info.value)
    assert expected in message and "\n" not in message


def test_summaries_defaults_and_default_yaml_agree():
    cfg = load_config(bundled_config_path("default.yaml"), environ={})
    assert cfg.summaries == NodeConfig().summaries
    assert (cfg.summaries.enabled, cfg.summaries.every_steps, cfg.summaries.bits, cfg.summaries.density) == (True, 20, 2, 0.02)
    assert (cfg.limits.summary_max_norm_ratio, cfg.limits.max_summary_bytes) == (10.0, 4 * 2**20)
    assert all(field.description for field in SummariesConfig.model_fields.values())
    # The smallest density that still sends one entry of each chunk is accepted.
    assert load_config(None, {"summaries.density": 1 / 64, "summaries.chunk_size": 64}, environ={}).summaries.chunk_size == 64
    env = {"SWARMNODE__SUMMARIES__ENABLED": "false", "SWARMNODE__SUMMARIES__BITS": "4"}
    assert (load_config(None, environ=env).summaries.enabled, load_config(None, environ=env).summaries.bits) == (False, 4)


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="file not found"):
        load_config(tmp_path / "nope.yaml", environ={})


@pytest.mark.parametrize(
    "args, expected",
    [
        (["run", "--home", "{home}", "--config", "{bad}"], "unknown field 'network.clientmode'"),
        (["run", "--home", "{home}", "--config", "{home}/missing.yaml"], "file not found"),
        (["run", "--home", "{home}", "--host-port", "abc"], "--host-port"),
        (["run", "--home", "{home}", "--transport", "foo"],
         "error: Invalid value for '--transport': 'foo' is not one of 'hivemind', 'libp2p'."),
        (["run", "--home", "{home}"], "not a node home"),
        (["status", "--home", "{home}"], "no swarmnode daemon is running"),
        (["run", "--home", "{home}", "--slowdown", "0.5"], ("--slowdown: 0.5 is not a valid training.slowdown: "
                                                           "Input should be greater than or equal to 1")),
        (["run", "--home", "{home}", "--slowdown", "nan"], "--slowdown: nan is not a valid training.slowdown"),
        (["run", "--home", "{home}", "--slowdown", "fast"], "'--slowdown'"),
        (["swarm", "local", "--root", "{home}", "--slowdowns", "1,x"], "--slowdowns 1,x: expected comma-separated numbers"),
        (["swarm", "local", "--root", "{home}", "--slowdowns", "1,2,0.9"], "--slowdowns 1,2,0.9: 0.9 is not a valid"),
        (["swarm", "local", "--root", "{home}", "--devices", "cpu,gpu"], "--devices cpu,gpu: 'gpu': expected cpu, cuda or cuda:<index>"),
    ],
)
def test_cli_errors_are_one_line(tmp_path, args, expected):
    bad = write(tmp_path, "network:\n  clientmode: true\n")
    argv = [a.format(home=tmp_path, bad=bad) for a in args]
    proc = subprocess.run([sys.executable, "-m", "swarmnode", *argv], capture_output=True, text=True, timeout=60)
    # 2: something given that the command cannot use, nothing started; 1: no daemon to ask
    assert proc.returncode == (1 if args[0] == "status" else 2), proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and expected in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


def test_bad_device_settings_get_one_line_naming_the_field(tmp_path):
    path = tmp_path / "c.yaml"
    for text, field in (("training:\n  micro_batch_tokens: 0\n", "training.micro_batch_tokens"),
                        ("training:\n  forward_chunking: sideways\n", "training.forward_chunking"),
                        ("model:\n  decode: fast\n", "model.decode"),
                        ("training:\n  foreign_shaping_gamma: 0\n", "training.foreign_shaping_gamma")):
        path.write_text(text)
        with pytest.raises(ConfigError) as info:
            load_config(path, environ={})
        assert field in str(info.value) and "\n" not in str(info.value).strip()


def test_slowdown_defaults_to_full_speed_and_reaches_the_node(tmp_path):
    assert NodeConfig().training.slowdown == 1.0
    assert load_config(None, environ={"SWARMNODE__TRAINING__SLOWDOWN": "2.5"}).training.slowdown == 2.5
    assert load_config(write(tmp_path, "training:\n  slowdown: 4\n"), {"training.slowdown": 3.0}, environ={}).training.slowdown == 3.0


def test_value_sources_name_flag_environment_file_and_default(tmp_path):
    path = write(tmp_path, "status:\n  port: 9000\nswarm:\n  name: x\n")
    _, sources = load_config_with_sources(path, {"status.port": 9001}, environ={"SWARMNODE__SWARM__NAME": "y"},
                                          flags={"status.port": "--status-port"})
    assert sources.of("status.port") == "--status-port"
    assert sources.of("swarm.name") == "environment variable SWARMNODE__SWARM__NAME"
    assert sources.of("swarm.window_s") == "the default swarm.window_s"
    assert sources.fix("swarm.window_s") == f"set swarm.window_s in {path}"
    _, sources = load_config_with_sources(path, environ={})
    assert sources.of("status.port") == f"status.port in {path}"


def test_a_bad_value_from_a_flag_or_the_environment_is_not_blamed_on_the_file(tmp_path):
    path = write(tmp_path, "swarm:\n  name: x\n")
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={"SWARMNODE__RECORDS__TTL_S": "soon"})
    assert "environment variable SWARMNODE__RECORDS__TTL_S" in str(info.value) and str(path) not in str(info.value)
    with pytest.raises(ConfigError) as info:
        load_config(path, {"status.port": 70000}, environ={}, flags={"status.port": "--status-port"})
    assert "in --status-port: status.port:" in str(info.value) and str(path) not in str(info.value)


def test_logging_defaults_and_default_yaml_agree():
    cfg = load_config(bundled_config_path("default.yaml"), environ={})
    assert cfg.logging == NodeConfig().logging
    assert (cfg.logging.max_bytes, cfg.logging.backup_count, cfg.logging.summary_interval_s) == (10 * 2**20, 5, 60.0)
    assert load_config(None, environ={"SWARMNODE__LOGGING__BACKUP_COUNT": "2"}).logging.backup_count == 2


def test_value_sources_describe_the_whole_config(tmp_path):
    path = write(tmp_path, "swarm:\n  name: x\n")
    _, sources = load_config_with_sources(path, {"status.port": 9001}, environ={"SWARMNODE__SWARM__NAME": "y"},
                                          flags={"status.port": "--status-port"})
    assert sources.described() == f"{path} with --status-port, SWARMNODE__SWARM__NAME"
    assert load_config_with_sources(path, environ={})[1].described() == str(path)
    assert load_config_with_sources(None, environ={})[1].described() == "defaults"


def test_the_generator_process_runs_on_a_cpu_or_a_gpu(tmp_path):
    path = tmp_path / "c.yaml"
    for device in ("cpu", "cuda", "cuda:1"):
        path.write_text(f"model:\n  device: {device}\n  decode: static\ntraining:\n  generator: process\n")
        config = load_config(path, environ={})
        assert config.training.generator == "process" and config.model.decode == "static"
