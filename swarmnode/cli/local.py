"""`swarmnode swarm local`: N daemons on 127.0.0.1 with a live table."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.live import Live

from swarmnode.cli.help import HelpCommand, HelpGroup
from swarmnode.cli.options import Transport
from swarmnode.cli.start import FAILED, fail, slowdown_problem
from swarmnode.config import ConfigError, load_config

swarm_app = typer.Typer(help="Run swarms of nodes.", no_args_is_help=True, cls=HelpGroup)


@swarm_app.command("local", cls=HelpCommand)
def swarm_local(
    nodes: int = typer.Option(3, "--nodes", min=1, max=32, help="number of node processes"),
    root: Path = typer.Option(Path("runs/local-swarm"), "--root", metavar="DIR", help="folder for the nodes' homes and logs"),
    config: Optional[Path] = typer.Option(
        None, "--config", metavar="FILE", help="config for every node (default: configs/local.yaml)"),
    duration: Optional[float] = typer.Option(None, "--duration", min=1, help="stop after this many seconds (default: until Ctrl-C)"),
    rounds: Optional[int] = typer.Option(None, "--rounds", min=1, help="each node trains this many steps, then all stop"),
    slowdowns: Optional[str] = typer.Option(
        None, "--slowdowns", metavar="X,Y,...", help="slowdowns; node i gets the (i mod count)-th, e.g. 1,2,4"),
    transport: Optional[Transport] = typer.Option(
        None, "--transport", help="every node's network.transport: hivemind (p2pd) or libp2p (pure Python)"),
    devices: Optional[str] = typer.Option(
        None, "--devices", metavar="D,E,...", help="model.device per node; node i gets the (i mod count)-th, "
                                                  "e.g. cuda,cpu: a GPU node beside CPU nodes"),
) -> None:
    """Start N daemons on 127.0.0.1 with a live table (Ctrl-C stops all).

    The first node is the bootstrap the others join through. Each node draws its own training questions (data_seed + 1000 * node index). At the end the
    last status of every node goes to <root>/summary.json; each home keeps metrics.sqlite and
    rollouts.sqlite.
    """
    from swarmnode.config import bundled_config_path
    from swarmnode.node.local_swarm import LocalSwarm, LocalSwarmError

    cfg_path = config if config is not None else bundled_config_path("local.yaml")
    try:
        node_config = load_config(cfg_path, environ={})
    except ConfigError as e:
        fail(str(e))
    factors = _parse_slowdowns(slowdowns) if slowdowns is not None else None
    node_devices = _parse_devices(devices) if devices is not None else None
    if rounds is not None and not node_config.model.name_or_path:
        fail(f"--rounds needs a config that trains a model; {cfg_path} sets no model.name_or_path "
             "(try --config with model.name_or_path: bundled:tiny-policy, e.g. the bundled local-train.yaml)")
    settings = NodeSettings(node_config.training.data_seed, rounds, transport, node_devices, factors)
    swarm = LocalSwarm(root.resolve(), nodes, cfg_path, node_env=settings.env, node_args=settings.args)
    console = Console()
    rows: list = []  # the last poll's, kept when Ctrl-C ends the table
    try:
        with swarm:
            swarm.start(on_progress=lambda msg: console.print(f"[dim]{msg}[/dim]"))
            _show_table(swarm, console, _caption(root, rounds, duration), duration, rounds, rows)
    except LocalSwarmError as e:
        fail(str(e), FAILED)
    except KeyboardInterrupt:
        pass
    (root / "summary.json").write_text(json.dumps(rows, indent=2, default=str), encoding="utf-8")
    console.print(f"stopped {nodes} nodes; homes, logs and summary.json in {root}")


@dataclass(frozen=True)
class NodeSettings:
    """What node i of a local swarm gets beyond the shared config: its environment and flags."""

    data_seed: int
    rounds: int | None
    transport: Transport | None
    devices: list[str] | None
    slowdowns: list[float] | None

    def env(self, index: int) -> dict[str, str]:
        env = {"SWARMNODE__TRAINING__DATA_SEED": str(self.data_seed + 1000 * index)}
        if self.rounds is not None:
            env["SWARMNODE__TRAINING__MAX_STEPS"] = str(self.rounds)
        if self.transport is not None:
            env["SWARMNODE__NETWORK__TRANSPORT"] = self.transport.value
        if self.devices is not None:
            env["SWARMNODE__MODEL__DEVICE"] = self.devices[index % len(self.devices)]
        return env

    def args(self, index: int) -> list[str]:
        return [] if self.slowdowns is None else ["--slowdown", repr(self.slowdowns[index % len(self.slowdowns)])]


def _caption(root: Path, rounds: int | None, duration: float | None) -> str:
    stop_at = [f"until every node has trained {rounds} steps"] if rounds else []
    stop_at += [f"for at most {duration:g} s"] if duration is not None else []
    until = " or ".join(stop_at) or "until Ctrl-C"
    return f"homes and logs in {root}; runs {until}; Ctrl-C stops every node"


def _show_table(swarm, console: Console, caption: str, duration: float | None, rounds: int | None,
                rows: list) -> None:
    """The live table of the swarm's nodes, polled every second until `duration` has passed or
    every node trained `rounds` steps; `rows` holds the last poll (also when Ctrl-C interrupts)."""
    from swarmnode.cli.render import swarm_table

    deadline = None if duration is None else time.monotonic() + duration
    rows[:] = swarm.poll()
    try:
        with Live(swarm_table(rows, caption), console=console, refresh_per_second=2) as live:
            while deadline is None or time.monotonic() < deadline:
                time.sleep(1.0)
                rows[:] = swarm.poll()
                live.update(swarm_table(rows, caption))
                if rounds is not None and swarm.training_done(rows):
                    break
    finally:
        if not console.is_terminal:
            console.line()  # rich ends the table's last line only on a terminal


def _parse_slowdowns(text: str) -> list[float]:
    """--slowdowns "1,2,4" as floats, each checked as training.slowdown is, before any node starts."""
    try:
        factors = [float(part) for part in text.split(",")]
    except ValueError:
        fail(f"--slowdowns {text}: expected comma-separated numbers >= 1, e.g. 1,2,4")
    for factor in factors:
        if problem := slowdown_problem(factor):
            fail(f"--slowdowns {text}: {problem}")
    return factors


def _parse_devices(text: str) -> list[str]:
    """--devices "cuda,cpu": each one checked on this machine (as --device is) before any node starts."""
    from swarmnode.node.preflight import device_problem

    names = [part.strip() for part in text.split(",")]
    for name in names:
        if problem := device_problem(name):
            fail(f"--devices {text}: {name!r}: {problem}")
    return names
