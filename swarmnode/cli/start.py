"""What the commands that start a daemon (`run`, `bootstrap`) share: the flag checks, the config
with where each value came from, the checks before start, and the run itself; and `fail`, how
every command stops on a user mistake (one line on stderr, never a traceback)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, NoReturn

import typer

from swarmnode.config import ConfigError, NodeConfig, ValueSources, load_config_with_sources
from swarmnode.home import NodeHome
from swarmnode.protocol.versions import ProtocolVersions


# Exit codes: USAGE when the command was given something it cannot use (a flag, a config value,
# an environment variable, a path) and started nothing, as click's own usage errors do; FAILED
# when it could not do its job (no daemon answers, no log yet, a node that failed while running).
USAGE = 2
FAILED = 1


def fail(message: str, code: int = USAGE) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def check_log_level(log_level: str) -> None:
    if log_level.upper() not in LOG_LEVELS:
        fail(f"--log-level {log_level}: expected one of {', '.join(LOG_LEVELS)}")


def slowdown_problem(value: float) -> str | None:
    """Why `value` is no valid training.slowdown (the config model's own check), or None."""
    from pydantic import ValidationError

    from swarmnode.config.model import TrainingConfig

    try:
        TrainingConfig(slowdown=value)
    except ValidationError as e:
        return f"{value:g} is not a valid training.slowdown: {e.errors()[0]['msg']}"
    return None


def load_run_config(path: Path, overrides: dict[str, Any], flags: dict[str, str],
                    port_flag: tuple[int | None, str]) -> tuple[NodeConfig, ValueSources]:
    """The daemon's config: `path` < environment < flags; `port_flag` (port, flag name) sets the
    TCP port of every host multiaddr. A bad value: one line naming it, exit USAGE."""
    port, flag = port_flag
    try:
        cfg, sources = load_config_with_sources(path, overrides, flags=flags)
        if port is not None:
            cfg.network.host_maddrs = [with_tcp_port(m, port, flag) for m in cfg.network.host_maddrs]
            sources = sources.with_flag("network.host_maddrs", flag)
    except ConfigError as e:
        fail(str(e))
    return cfg, sources


def check_before_start(cfg: NodeConfig, sources: ValueSources, root: Path, source_of_home: str) -> None:
    """Exit USAGE with one line per problem found before anything starts (node/preflight.py)."""
    from swarmnode.node.preflight import probe_start, start_problems

    problems = start_problems(cfg, probe_start(cfg, root), sources, root, source_of_home)
    for line in problems[:-1]:
        typer.echo(f"error: {line}", err=True)
    if problems:
        fail(problems[-1])


def run_daemon_until_stopped(cfg: NodeConfig, sources: ValueSources, node_home: NodeHome, log_level: str,
                             versions: ProtocolVersions, role: str = "node") -> NoReturn:
    """Run the daemon (speaking `versions`, in `role`: "node" or "bootstrap") in this process;
    exit with its exit code."""
    from swarmnode.node.runner import run_daemon

    raise typer.Exit(run_daemon(cfg, node_home, log_level, sources.described(), protocol_versions=versions, role=role))


def with_tcp_port(maddr: str, port: int, flag: str = "--host-port") -> str:
    parts = maddr.split("/")
    if "tcp" not in parts:
        raise ConfigError(f"config error: {flag} needs network.host_maddrs with /tcp/, got {maddr}")
    parts[parts.index("tcp") + 1] = str(port)
    return "/".join(parts)
