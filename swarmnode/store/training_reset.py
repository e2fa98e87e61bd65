"""Moving a home's training aside, so that the home can train another model.

The training state tied to one model is its checkpoints (weights, optimizer, the outer loop's
state) and the metrics history of its training (metrics.sqlite): they move into a dated folder
in the home, `old-training-<YYYYmmdd-HHMMSS>`, nothing deleted. What is not tied to a model
stays: the keys (the peer id), config.yaml, the logs, rollouts.sqlite (peers' groups, standing
and trust) and the base-fingerprint cache (keyed by model).
"""
from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

TRAINING_STATE = ("checkpoints", "metrics.sqlite", "metrics.sqlite-wal", "metrics.sqlite-shm")
ASIDE_PREFIX = "old-training-"


def aside_folder(home_root: Path, now: datetime) -> Path:
    """The dated folder a reset at `now` moves the training into (-2, -3, ... after the date
    when a reset in the same second made one already)."""
    folder = home_root / f"{ASIDE_PREFIX}{now:%Y%m%d-%H%M%S}"
    n = 2
    while folder.exists():
        folder, n = home_root / f"{ASIDE_PREFIX}{now:%Y%m%d-%H%M%S}-{n}", n + 1
    return folder


def training_state_in(home_root: Path) -> list[Path]:
    """The parts of TRAINING_STATE the home holds."""
    return [home_root / name for name in TRAINING_STATE if (home_root / name).exists()]


def move_aside(paths: list[Path], aside: Path) -> None:
    """Move each of `paths` into the new folder `aside` (same file system: renames, nothing copied).
    FileExistsError when `aside` exists already."""
    aside.mkdir(mode=0o700)
    for path in paths:
        os.replace(path, aside / path.name)
