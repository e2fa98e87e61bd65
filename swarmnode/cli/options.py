"""Options and choices several commands share."""
from __future__ import annotations

import enum

import typer

HomeOption = typer.Option(None, "--home", metavar="DIR", help="node home (default: $SWARMNODE_HOME or ~/.swarmnode)")


class Transport(str, enum.Enum):
    """network.transport as a flag (typer offers an enum's values as the choices)."""

    hivemind = "hivemind"
    libp2p = "libp2p"


RARE = "Rarely needed"  # the help panel of `run` options most nodes leave alone
