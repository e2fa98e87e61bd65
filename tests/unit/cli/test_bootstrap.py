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
    assert bootstrap_overrides([], [], None, None) == {}
    assert bootstrap_overrides(["/dns4/b.example.org/tcp/7100"], [f"/ip4/198.51.100.2/tcp/7100/p2p/{PEER}"],
                               "my-swarm", 9000) == {
        "network.announce_maddrs": ["/dns4/b.example.org/tcp/7100"],
        "swarm.initial_peers": [f"/ip4/198.51.100.2/tcp/7100/p2p/{PEER}"],
        "swarm.name": "my-swarm", "status.port": 9000}


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
