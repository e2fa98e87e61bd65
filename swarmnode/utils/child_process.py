"""Starting a Python child of this package: the command and the environment that make the child
import the very swarmnode package its parent runs (installed, or from a checkout)."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Mapping

# The folder this swarmnode package was imported from: site-packages, or a checkout's root.
PACKAGE_ROOT = Path(__file__).resolve().parents[2]


def python_module_command(module: str, *args: str) -> list[str]:
    """`python -P -m <module> <args>` with this interpreter. -P keeps the working folder off
    sys.path: run from a folder that holds a clone (`~/swarmnode`), the child would otherwise import
    that folder as the `swarmnode` package instead of the installed one. Start it with
    child_environment(), which says where this package is when it is not installed."""
    return [sys.executable, "-P", "-m", module, *args]


def child_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This environment for a child of python_module_command: unbuffered output, and, when this
    package runs from a checkout (installed in place, or not installed at all: the working
    folder), that checkout first on PYTHONPATH, so the child runs the very package its parent
    does. An installed package's site-packages is found anyway, and is not put before the
    standard library."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if PACKAGE_ROOT.name not in ("site-packages", "dist-packages"):
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_ROOT), env.get("PYTHONPATH", "")) if p)
    return {**env, **(extra or {})}
