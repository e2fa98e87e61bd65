"""cli/bootstrap.py and `swarmnode bootstrap`'s flags: the bundled config, what each flag sets,
the addresses printed for users, and a bad flag or home stopping in one line before anything starts."""
from pathlib import Path

import pytest
from typer.testing import CliRunner

from swarmnode.cli.app import app
from swarmnode.cli.bootstrap import (
    BOOTSTRAP_CONFIG,
    BOOTSTRAP_PORT,
    announce_problem,
    bootstrap_overrides,
    user_address_lines,
)
from swarmnode.config import bundled_config_path, load_config
from swarmnode.swarm.relaying.reachability import listening_ports

PEER = "12D3KooWNmvbb66jhZF1ZWMGibUUUz6eJG75kvUSEsA4EJTv4Q4J"


def test_bundled_config_is_a_model_less_dht_server_on_the_documented_port():
    cfg = load_config(bundled_config_path(BOOTSTRAP_CONFIG), environ={})
    assert cfg.model.name_or_path is None and cfg.network.client_mode is False
    assert cfg.network.host_maddrs == [f"/ip4/0.0.0.0/tcp/{BOOTSTRAP_PORT}"]
    default = load_config(bundled_config_path("default.yaml"), environ={})
    assert (cfg.swarm.name, cfg.swarm.window_s) == (default.swarm.name, default.swarm.window_s)


def test_flags_become_config_values_and_unset_flags_none():
    assert bootstrap_overrides({}) == {}
    assert bootstrap_overrides({"--announce": ["/dns4/b.example.org/tcp/7100"], "--port": 7200,
                                "--initial-peer": [f"/ip4/198.51.100.2/tcp/7100/p2p/{PEER}"], "--swarm": "my-swarm",
                                "--status-port": 9000, "--window-s": 10.0, "--transport": "libp2p"}) == {
        "network.announce_maddrs": ["/dns4/b.example.org/tcp/7100"],
        "swarm.initial_peers": [f"/ip4/198.51.100.2/tcp/7100/p2p/{PEER}"],
        "swarm.name": "my-swarm", "status.port": 9000, "swarm.window_s": 10.0, "network.transport": "libp2p"}


def test_an_announced_address_carries_no_peer_id():
    assert announce_problem(["/dns4/b.example.org/tcp/7100", "/ip4/203.0.113.7/tcp/7100"]) is None
    line = announce_problem([f"/dns4/b.example.org/tcp/7100/p2p/{PEER}"])
    assert line.startswith(f"--announce /dns4/b.example.org/tcp/7100/p2p/{PEER}: give the address without /p2p/")


def test_listen_port_is_the_first_tcp_port():
    assert listening_ports(["/ip4/0.0.0.0/udp/9/quic", "/ip4/0.0.0.0/tcp/7100"]) == [7100]
    assert listening_ports(["/ip4/0.0.0.0/udp/9/quic"]) == []


def test_users_get_the_announced_addresses_with_the_peer_id():
    lines = user_address_lines(["/dns4/b.example.org/tcp/7100", "/ip4/203.0.113.7/tcp/7100/"], ["/ip4/0.0.0.0/tcp/7100"], PEER)
    assert lines[1:] == [f"  /dns4/b.example.org/tcp/7100/p2p/{PEER}", f"  /ip4/203.0.113.7/tcp/7100/p2p/{PEER}"]


def test_without_announce_users_get_the_form_of_the_address_on_the_listening_port():
    text = "\n".join(user_address_lines([], ["/ip4/0.0.0.0/tcp/7200"], PEER))
    assert f"/dns4/<this host's DNS name>/tcp/7200/p2p/{PEER}" in text and "--announce /dns4/<name>/tcp/7200" in text


def bootstrap(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["bootstrap", *args], env={"SWARMNODE__SWARM__NAME": None})
    return result.exit_code, result.output


@pytest.mark.parametrize("args, expected", [
    (["--announce", f"/dns4/b.example.org/tcp/7100/p2p/{PEER}"], "error: --announce /dns4/b.example.org/tcp/7100/p2p/"),
    (["--announce", "boot1.example.org"], "error: config error in --announce: network.announce_maddrs: 'boot1.example.org' "
                                          "is not a multiaddr"),
    (["--initial-peer", "/dns4/b.example.org/tcp/7100"], "error: config error in --initial-peer: swarm.initial_peers: "
                                                         "'/dns4/b.example.org/tcp/7100' has no /p2p/<peer id> part"),
    (["--swarm", ""], "error: config error in --swarm: swarm.name:"),
    (["--log-level", "LOUD"], "error: --log-level LOUD: expected one of"),
])
def test_a_bad_flag_is_one_line_naming_it(tmp_path, args, expected):
    code, output = bootstrap("--home", str(tmp_path / "boot"), *args)
    assert code in (1, 2) and output.splitlines()[-1].startswith(expected), output
    assert "Traceback" not in output


def test_port_out_of_range_is_one_line(tmp_path):
    code, output = bootstrap("--home", str(tmp_path), "--port", "70000")
    assert code == 2 and "Invalid value for '--port'" in output and "Traceback" not in output


def test_home_of_a_training_node_is_refused_in_one_line(tmp_path):
    home = tmp_path / "node"
    home.mkdir()
    (home / "config.yaml").write_text("model:\n  name_or_path: bundled:tiny-policy\n", encoding="utf-8")
    code, output = bootstrap("--home", str(home))
    assert code == 2
    assert output.splitlines()[-1] == (f"error: {home}/config.yaml sets model.name_or_path (bundled:tiny-policy): it is "
                                       "the home of a node that trains; give the bootstrap node a home of its own (--home DIR)")


def test_first_start_makes_the_home_from_the_bundled_config(tmp_path):
    home = tmp_path / "boot"
    code, output = bootstrap("--home", str(home), "--announce", "nonsense")  # stops after making the home
    assert code == 2 and f"created config {home}/config.yaml" in output
    assert (home / "config.yaml").read_text() == Path(bundled_config_path(BOOTSTRAP_CONFIG)).read_text()
    assert (home / "p2p_identity.key").exists() and (home / "node_key.pem").exists()


@pytest.mark.parametrize("value, expected", [
    ("0", "error: config error in --window-s: swarm.window_s: Input should be greater than 0 (got 0.0); change --window-s"),
    ("inf", "error: config error in --window-s: swarm.window_s: Input should be less than or equal to 86400"),
])
def test_a_bad_window_is_one_line_naming_the_flag(tmp_path, value, expected):
    code, output = bootstrap("--home", str(tmp_path / "boot"), "--window-s", value)
    assert code == 2 and output.splitlines()[-1].startswith(expected), output
    assert not (tmp_path / "boot" / "bootstrap.json").exists()  # nothing saved from a start that did not happen


class Started:
    """What `swarmnode bootstrap` handed the daemon, in place of running it."""

    def __init__(self, monkeypatch):
        from swarmnode.cli import daemon_commands
        from swarmnode.node import runner

        self.runs: list[tuple] = []
        monkeypatch.setattr(daemon_commands, "check_before_start", lambda *args: None)
        monkeypatch.setattr(runner, "run_daemon", lambda cfg, home, *args, protocol_versions, role: self.runs.append(
            (cfg, role)) or 0)


def test_the_home_remembers_the_flags_and_flags_given_later_replace_them(tmp_path, monkeypatch):
    import json

    started, home = Started(monkeypatch), tmp_path / "boot"
    code, output = bootstrap("--home", str(home), "--swarm", "my-swarm", "--window-s", "10", "--port", "7300",
                             "--announce", "/dns4/b.example.org/tcp/7300")
    assert code == 0, output
    saved = json.loads((home / "bootstrap.json").read_text())
    assert saved == {"role": "bootstrap", "flags": {"--swarm": "my-swarm", "--window-s": 10.0, "--port": 7300,
                                                    "--announce": ["/dns4/b.example.org/tcp/7300"]}}
    assert (f"saved the flags in {home}/bootstrap.json for the next starts (flags given then replace them): "
            "--swarm my-swarm --window-s 10 --port 7300 --announce /dns4/b.example.org/tcp/7300") in output

    (home / "bootstrap.json").chmod(0o444)  # a restart with the same flags leaves the file as it was
    code, output = bootstrap("--home", str(home))  # --home alone: as it was first started
    assert code == 0 and f"flags saved in {home}/bootstrap.json (flags given replace them): --swarm my-swarm" in output
    assert (home / "bootstrap.json").stat().st_mode & 0o777 == 0o444
    code, output = bootstrap("--home", str(home), "--window-s", "20")
    assert code == 0 and "saved the flags in" in output
    assert json.loads((home / "bootstrap.json").read_text())["flags"]["--window-s"] == 20.0
    (first, role), (second, _), (third, _) = started.runs
    assert role == "bootstrap"
    for cfg in (first, second, third):
        assert (cfg.swarm.name, cfg.network.host_maddrs, cfg.network.announce_maddrs) == (
            "my-swarm", ["/ip4/0.0.0.0/tcp/7300"], ["/dns4/b.example.org/tcp/7300"])
    assert [cfg.swarm.window_s for cfg in (first, second, third)] == [10.0, 10.0, 20.0]


@pytest.mark.parametrize("text, expected", [
    ("not json", "bootstrap.json is not a bootstrap node's saved flags"),
    ('{"role": "bootstrap", "flags": {"--port": "7100"}}', "bootstrap.json: --port '7100' is not a port (1-65535)"),
    ('{"role": "bootstrap", "flags": {"--colour": "red"}}', "bootstrap.json: unknown flag '--colour'"),
    ('{"role": "bootstrap", "flags": {"--window-s": -1}}', "config error in --window-s (saved in bootstrap.json): "
                                                           "swarm.window_s: Input should be greater than 0"),
])
def test_a_bad_saved_flag_is_one_line(tmp_path, monkeypatch, text, expected):
    Started(monkeypatch)
    home = tmp_path / "boot"
    home.mkdir()
    (home / "bootstrap.json").write_text(text, encoding="utf-8")
    code, output = bootstrap("--home", str(home))
    assert code == 2 and expected in output.splitlines()[-1] and "Traceback" not in output, output


def test_run_refuses_a_bootstrap_nodes_home_in_one_line(tmp_path, monkeypatch):
    Started(monkeypatch)
    home = tmp_path / "boot"
    assert bootstrap("--home", str(home))[0] == 0
    result = CliRunner().invoke(app, ["run", "--home", str(home)])
    assert result.exit_code == 2
    assert result.output.splitlines() == [
        f"error: {home} is a bootstrap node's home ({home}/bootstrap.json): start it with: swarmnode bootstrap --home "
        f"{home}; a node that trains needs a home of its own (swarmnode init --home DIR)"]
