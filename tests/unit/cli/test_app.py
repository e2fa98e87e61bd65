"""cli/app.py: the command built for the protocol versions its node speaks."""
from typer.testing import CliRunner

from swarmnode import __version__
from swarmnode.cli.app import app, make_app
from swarmnode.protocol.versions import ProtocolVersions


def test_version_names_the_protocol_versions_of_the_app():
    assert CliRunner().invoke(app, ["version"]).output == f"swarmnode {__version__} (protocol v2)\n"
    newer = CliRunner().invoke(make_app(ProtocolVersions(3, 4)), ["version"])
    assert newer.output == f"swarmnode {__version__} (protocol v3–v4)\n"


def test_run_hands_the_apps_versions_to_the_daemon(tmp_path, monkeypatch):
    from swarmnode.cli import daemon_commands
    from swarmnode.node import runner

    given = {}
    monkeypatch.setattr(daemon_commands, "check_before_start", lambda *args: None)
    monkeypatch.setattr(runner, "run_daemon", lambda *args, protocol_versions, role="node": given.update(v=protocol_versions) or 0)
    home = tmp_path / "home"
    assert CliRunner().invoke(make_app(ProtocolVersions(3, 4)), ["init", "--home", str(home)]).exit_code == 0
    result = CliRunner().invoke(make_app(ProtocolVersions(3, 4)), ["run", "--home", str(home)])
    assert result.exit_code == 0, result.output
    assert given["v"] == ProtocolVersions(3, 4)
