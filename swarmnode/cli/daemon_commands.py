"""`swarmnode run` and `swarmnode bootstrap`: the commands that start a daemon in this process.

Each reads the protocol versions its node speaks from the click context's obj (make_app's).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from swarmnode.cli.options import RARE, HomeOption, Transport
from swarmnode.cli.start import (
    check_before_start, check_log_level, fail, load_run_config, run_daemon_until_stopped, slowdown_problem)
from swarmnode.config import NodeConfig, ValueSources
from swarmnode.home import (
    BootstrapFileError, NodeHome, home_source, is_bootstrap_home, read_bootstrap_flags, resolve_home, write_bootstrap_flags)


def run(
    ctx: typer.Context,
    home: Optional[Path] = HomeOption,
    config: Optional[Path] = typer.Option(None, "--config", metavar="FILE", help="config (default: <home>/config.yaml)"),
    initial_peer: list[str] = typer.Option(
        [], "--initial-peer", metavar="MULTIADDR", help="a peer to join through (repeatable)"),
    host_port: Optional[int] = typer.Option(
        None, "--host-port", min=0, max=65535, metavar="PORT", help="the node's TCP port (0: any)", rich_help_panel=RARE),
    transport: Optional[Transport] = typer.Option(
        None, "--transport", metavar="NAME", help="hivemind or libp2p", rich_help_panel=RARE),
    status_port: Optional[int] = typer.Option(
        None, "--status-port", min=0, max=65535, metavar="PORT", help="status HTTP port", rich_help_panel=RARE),
    client_mode: Optional[bool] = typer.Option(
        None, "--client-mode/--no-client-mode", help="accept no inbound connections", rich_help_panel=RARE),
    log_level: str = typer.Option(
        "INFO", "--log-level", metavar="LEVEL", help="DEBUG, INFO, WARNING or ERROR", rich_help_panel=RARE),
    slowdown: Optional[float] = typer.Option(
        None, "--slowdown", metavar="X", help="run X times slower (X >= 1)", rich_help_panel=RARE),
    keep_serving: Optional[bool] = typer.Option(
        None, "--keep-serving", rich_help_panel=RARE, help="on a training failure, serve on without training"),
) -> None:
    """Run the node daemon in the foreground (Ctrl-C stops it).

    Every config field can also be set as SWARMNODE__SECTION__FIELD=value (docs/configuration.md).
    """
    root = resolve_home(home)
    node_home = NodeHome(root)
    check_log_level(log_level)
    if is_bootstrap_home(node_home):
        fail(f"{root} is a bootstrap node's home ({node_home.bootstrap_file}): start it with: swarmnode bootstrap "
             f"--home {root}; a node that trains needs a home of its own (swarmnode init --home DIR)")
    overrides: dict[str, Any] = {}
    if initial_peer:
        overrides["swarm.initial_peers"] = list(initial_peer)
    if status_port is not None:
        overrides["status.port"] = status_port
    if client_mode is not None:
        overrides["network.client_mode"] = client_mode
    if transport is not None:
        overrides["network.transport"] = transport.value
    if slowdown is not None:
        if problem := slowdown_problem(slowdown):  # named as the flag, not as a line of the config file
            fail(f"--slowdown: {problem}")
        overrides["training.slowdown"] = slowdown
    if keep_serving is not None:
        overrides["training.keep_serving"] = keep_serving
    config_path = config if config is not None else node_home.config
    if config is not None and not config.is_file():
        fail(f"--config {config}: file not found; check the path")
    if config is None and not node_home.config.exists():
        fail(f"{root} is not a node home (no config.yaml); create it with: swarmnode init --home {root}")
    cfg, sources = load_run_config(config_path, overrides, RUN_FLAGS, (host_port, "--host-port"))
    check_before_start(cfg, sources, root, home_source(home))
    run_daemon_until_stopped(cfg, sources, node_home, log_level, ctx.obj)


RUN_FLAGS = {"swarm.initial_peers": "--initial-peer", "status.port": "--status-port",
             "network.client_mode": "--client-mode", "training.slowdown": "--slowdown",
             "training.keep_serving": "--keep-serving", "network.transport": "--transport"}



def bootstrap(
    ctx: typer.Context,
    home: Optional[Path] = typer.Option(
        None, "--home", metavar="DIR", help="its home, made on first start (default: ~/.swarmnode-bootstrap)"),
    port: Optional[int] = typer.Option(
        None, "--port", min=1, max=65535, metavar="PORT", help="TCP port on every interface (default: 7100)"),
    announce: list[str] = typer.Option(
        [], "--announce", metavar="MULTIADDR", help="public address users dial, e.g. /dns4/HOST/tcp/7100 (repeatable)"),
    initial_peer: list[str] = typer.Option(
        [], "--initial-peer", metavar="MULTIADDR", help="another bootstrap node of the swarm (repeatable)"),
    swarm: Optional[str] = typer.Option(None, "--swarm", metavar="NAME", help="the swarm it serves (default: swarmnode-public)"),
    window_s: Optional[float] = typer.Option(
        None, "--window-s", metavar="SECONDS", help="the swarm's swarm.window_s, shared by all its nodes (default: 30)"),
    transport: Optional[Transport] = typer.Option(
        None, "--transport", metavar="NAME", help="hivemind or libp2p", rich_help_panel=RARE),
    status_port: Optional[int] = typer.Option(
        None, "--status-port", min=0, max=65535, metavar="PORT", help="status HTTP port", rich_help_panel=RARE),
    log_level: str = typer.Option(
        "INFO", "--log-level", metavar="LEVEL", help="DEBUG, INFO, WARNING or ERROR", rich_help_panel=RARE),
) -> None:
    """Run a bootstrap node: a DHT server at a fixed address.

    It holds no model; nodes join the swarm through it. Its home (keys, and config.yaml from
    configs/bootstrap.yaml) is made on first start and keeps its peer id across restarts; it remembers the flags
    (<home>/bootstrap.json): flags given later replace the saved ones. See docs/operators.md.
    """
    from swarmnode.cli.bootstrap import (
        DEFAULT_BOOTSTRAP_HOME, announce_problem, bootstrap_overrides, flag_sources, given_flags, merged_flags,
        saved_flag_name, saved_flags_line, user_address_lines)

    check_log_level(log_level)
    given = given_flags({"--swarm": swarm, "--window-s": window_s, "--port": port, "--announce": announce,
                         "--initial-peer": initial_peer, "--transport": transport.value if transport else None,
                         "--status-port": status_port})
    if problem := announce_problem(announce):
        fail(problem)
    root = (home if home is not None else DEFAULT_BOOTSTRAP_HOME).expanduser().resolve()
    peer_id = _make_bootstrap_home(root)
    node_home = NodeHome(root)
    saved = _saved_bootstrap_flags(node_home)
    flags = merged_flags(saved or {}, given)
    sources_of_flags = flag_sources(saved or {}, given, node_home.bootstrap_file)
    if problem := announce_problem(flags.get("--announce", [])):
        fail(f"{problem} (saved in {node_home.bootstrap_file})")
    cfg, sources = load_run_config(node_home.config, bootstrap_overrides(flags), sources_of_flags,
                                   (flags.get("--port"), saved_flag_name("--port", given, node_home.bootstrap_file)))
    _check_bootstrap_config(cfg, sources, node_home)
    check_before_start(cfg, sources, root, "--home" if home is not None else f"the default home {DEFAULT_BOOTSTRAP_HOME}")
    try:
        if flags != saved:  # rewritten only when they change: a restart leaves the file as it was
            write_bootstrap_flags(node_home, flags)
    except OSError as e:
        fail(f"cannot save the flags in {node_home.bootstrap_file}: {e.strerror or e}; make {root} writable")
    typer.echo(saved_flags_line(flags, saved, node_home.bootstrap_file))
    for line in user_address_lines(cfg.network.announce_maddrs, cfg.network.host_maddrs, peer_id):
        typer.echo(line)
    run_daemon_until_stopped(cfg, sources, node_home, log_level, ctx.obj, role="bootstrap")


def _saved_bootstrap_flags(node_home: NodeHome) -> dict[str, Any] | None:
    """The flags the home's bootstrap.json saved (None: none saved yet); one line on a bad file."""
    from swarmnode.cli.bootstrap import saved_flags_problem

    try:
        saved = read_bootstrap_flags(node_home)
    except BootstrapFileError as e:
        fail(str(e))
    if saved is not None and (problem := saved_flags_problem(saved, node_home.bootstrap_file)):
        fail(problem)
    return saved


def _check_bootstrap_config(cfg: NodeConfig, sources: ValueSources, node_home: NodeHome) -> None:
    """A bootstrap node loads no model and accepts connections: one line otherwise."""
    if cfg.model.name_or_path:
        fail(f"{node_home.config} sets model.name_or_path ({cfg.model.name_or_path}): it is the home of a node "
             "that trains; give the bootstrap node a home of its own (--home DIR)")
    if cfg.network.client_mode:
        fail(f"network.client_mode is true (from {sources.of('network.client_mode')}): a bootstrap node must "
             f"accept connections; {sources.fix('network.client_mode')} to false")


def _make_bootstrap_home(root: Path) -> str:
    """Create what is missing in a bootstrap node's home (as `init` does, with configs/bootstrap.yaml);
    return its peer id."""
    from swarmnode.cli.bootstrap import BOOTSTRAP_CONFIG
    from swarmnode.config import bundled_config_path
    from swarmnode.home import init_home
    from swarmnode.identity import KeyFileError, peer_id_from_ed25519
    from swarmnode.identity.keys import load_p2p_identity

    try:
        result = init_home(root, bundled_config_path(BOOTSTRAP_CONFIG).read_text(encoding="utf-8"))
        peer_id = peer_id_from_ed25519(load_p2p_identity(result.home.p2p_identity).public_bytes)
    except OSError as e:
        fail(f"cannot create the bootstrap node's home {root}: {e.strerror or e}; pass another --home")
    except KeyFileError as e:
        fail(str(e))
    for line in result.created:
        typer.echo(f"created {line}")
    return peer_id
