"""A commit checked out into a temporary git worktree, for benches that run several commits' own
code side by side (scripts/bench/gossip_share_at.py, scale_bench_at.py)."""
from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path
from typing import Iterator


@contextlib.contextmanager
def worktree_at(repo: Path, commit: str, tree: Path) -> Iterator[Path]:
    """`commit` of `repo` checked out (detached) at `tree`, removed again on exit."""
    subprocess.run(["git", "worktree", "add", "--detach", str(tree), commit], cwd=repo, check=True,
                   capture_output=True)
    try:
        yield tree
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=repo, capture_output=True)


def environment_of(tree: Path) -> dict[str, str]:
    """This process's environment with `tree` first on PYTHONPATH (its swarmnode is the one imported)."""
    return {**os.environ, "PYTHONPATH": str(tree)}
