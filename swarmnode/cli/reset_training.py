"""`swarmnode reset-training`: move a home's training aside so that it can train another model."""
from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Optional

import typer

from swarmnode.cli.options import HomeOption
from swarmnode.cli.start import FAILED, fail
from swarmnode.home import DaemonLock, HomeLocked, NodeHome, home_source, read_runtime, resolve_home
from swarmnode.store.training_reset import aside_folder, move_aside, training_state_in

KEPT = "the keys (same peer id), config.yaml, logs/, and peers' groups, standing and trust (rollouts.sqlite)"


def reset_training(
    home: Optional[Path] = HomeOption,
    yes: bool = typer.Option(False, "--yes", "-y", help="move without asking"),
) -> None:
    """Move a home's training aside, to train another model in it.

    The checkpoints and the metrics history go to a dated folder in the home
    (old-training-YYYYmmdd-HHMMSS), nothing deleted; the keys (so the peer id), config.yaml, the
    logs and peers' standing and trust stay. Use it after changing model.name_or_path when
    `swarmnode run` refuses to start because the home holds another model's training. Refused
    while a daemon runs on the home.
    """
    root = resolve_home(home)
    node_home = NodeHome(root)
    if not node_home.config.is_file():
        fail(f"{root} is not a node home (no config.yaml) (from {home_source(home)}); pass the home to reset with --home")
    lock = DaemonLock(node_home)
    try:
        lock.acquire()  # held while moving: no daemon can start on the home meanwhile
    except HomeLocked:
        pid = read_runtime(node_home).get("pid", "?")
        fail(f"a swarmnode daemon (pid {pid}) is running with home {root}; stop it first, then reset its training",
             FAILED)
    except OSError as e:
        fail(f"cannot lock node home {root}: {e.strerror or e}; make {node_home.run_dir} writable", FAILED)
    try:
        _move_training_aside(root, yes)
    finally:
        lock.release()


def _move_training_aside(root: Path, yes: bool) -> None:
    found = training_state_in(root)
    if not found:
        typer.echo(f"nothing to move: node home {root} holds no checkpoints and no metrics history")
        return
    aside = aside_folder(root, datetime.now())
    names = ", ".join(p.name for p in found)
    typer.echo(f"moves {names} from {root} to {aside}; keeps {KEPT}")
    if not yes and not typer.confirm("move them?"):
        typer.echo("nothing moved")
        raise typer.Exit(FAILED)
    try:
        move_aside(found, aside)
    except OSError as e:
        fail(f"cannot move the training of {root} to {aside}: {e.strerror or e}; nothing was deleted: "
             f"move {names} out of {root} by hand", FAILED)
    typer.echo(f"moved {names} to {aside}; the next start trains the configured model from its base weights")
