"""The `swarmnode` command: init, run, bootstrap, status, peers, logs, reset-training, swarm local, bench async.

The CLI holds no logic the daemon needs: it parses flags, calls into swarmnode.node /
swarmnode.status, and prints. Every user mistake ends as one line on stderr and exit code 2,
a command that could not do its job (no daemon answers, say) with exit code 1; never a traceback.
`make_app(versions)` builds the command for a node speaking `versions` (the click context's obj).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional

import typer

from swarmnode import __version__
from swarmnode.cli.bench import bench_app
from swarmnode.cli.daemon_commands import bootstrap, run
from swarmnode.cli.help import HelpCommand, HelpGroup
from swarmnode.cli.local import swarm_app
from swarmnode.cli.options import HomeOption
from swarmnode.cli.start import fail
from swarmnode.cli.reset_training import reset_training
from swarmnode.cli.status_commands import logs, peers, status
from swarmnode.config import ConfigError, load_config
from swarmnode.home import resolve_home
from swarmnode.protocol.versions import THIS_RELEASE, ProtocolVersions


def make_app(versions: ProtocolVersions = THIS_RELEASE) -> typer.Typer:
    """The `swarmnode` command whose `run`, `bootstrap` and `version` use `versions`."""
    app = typer.Typer(
        name="swarmnode",
        help="A node for decentralized peer-to-peer RL post-training of language models.",
        no_args_is_help=True,
        add_completion=False,
        cls=HelpGroup,
        pretty_exceptions_enable=False,
        context_settings={"obj": versions},
    )
    app.add_typer(swarm_app, name="swarm")
    app.add_typer(bench_app, name="bench")
    for command in (version, init, run, bootstrap, status, peers, logs, reset_training):
        app.command(cls=HelpCommand)(command)
    return app


def version(ctx: typer.Context) -> None:
    """Print the software and protocol versions."""
    versions: ProtocolVersions = ctx.obj
    lowest, highest = versions.spoken
    spoken = f"v{lowest}" if lowest == highest else f"v{lowest}–v{highest}"
    typer.echo(f"swarmnode {__version__} (protocol {spoken})")


def init(
    home: Optional[Path] = HomeOption,
    config: Optional[Path] = typer.Option(
        None, "--config", metavar="FILE", help="YAML to copy as the home's config (default: configs/default.yaml)"),
) -> None:
    """Create a node home: keys and config.yaml (keeps any keys).

    The keys are an Ed25519 node key and a libp2p identity; `swarmnode run` uses the home.
    """
    from swarmnode.home import init_home
    from swarmnode.identity import PASSPHRASE_ENV

    root = resolve_home(home)
    text = None
    if config is not None:
        try:
            load_config(config, environ={})  # refuse to copy a config the daemon would reject
        except ConfigError as e:
            fail(str(e))
        text = config.read_text(encoding="utf-8")
    try:
        result = init_home(root, text)
    except OSError as e:
        fail(f"cannot create node home {root}: {e}")
    for line in result.created:
        typer.echo(f"created {line}")
    for line in result.kept:
        typer.echo(f"kept existing {line}")
    from swarmnode.identity import KeyFileError, peer_id_from_ed25519
    from swarmnode.identity.keys import load_p2p_identity

    try:
        typer.echo(f"peer id: {peer_id_from_ed25519(load_p2p_identity(result.home.p2p_identity).public_bytes)}")
    except KeyFileError as e:
        fail(str(e))
    if any(line.startswith("node key") for line in result.created):
        if os.environ.get(PASSPHRASE_ENV):
            typer.echo(f"the node key is encrypted with {PASSPHRASE_ENV}; set it for `swarmnode run` too")
        else:
            typer.echo(f"the node key is not encrypted (set {PASSPHRASE_ENV} during init to encrypt it)")


app = make_app()


def main(argv: list[str] | None = None, versions: ProtocolVersions = THIS_RELEASE) -> int:
    """Entry point: turns flag errors into one line instead of a usage panel."""
    try:
        result = make_app(versions)(args=argv, standalone_mode=False)
    except typer.Exit as e:
        return int(e.exit_code or 0)
    except typer.Abort:
        typer.echo("aborted", err=True)
        return 130
    except Exception as e:  # noqa: BLE001
        # typer's (vendored) click usage errors carry format_message() and exit_code.
        if hasattr(e, "format_message") and hasattr(e, "exit_code"):
            command = " ".join(["swarmnode", *[a for a in (argv if argv is not None else sys.argv[1:]) if not a.startswith("-")][:1]])
            # typer checks an enum flag through pydantic, whose prefix says nothing to a user
            message = e.format_message().replace(": Value error, ", ": ")
            typer.echo(f"error: {message} (see: {command} --help)", err=True)
            return int(e.exit_code)
        raise
    return int(result) if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
