"""Clean up what a killed daemon of the same home left behind (p2pd, its unix sockets)."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import psutil

log = logging.getLogger(__name__)


def kill_leftover_children(runtime: dict[str, Any]) -> list[int]:
    """Kill child processes recorded in a stale runtime file, if they are still the same ones.

    A pid is only killed when its process still has the recorded creation time, so a pid the
    OS has reused for something else is never touched. Returns the pids killed.
    """
    killed = []
    for child in runtime.get("children", []):
        try:
            proc = psutil.Process(int(child["pid"]))
            if abs(proc.create_time() - float(child["create_time"])) > 0.01:
                continue
            proc.kill()
            proc.wait(timeout=5)
            killed.append(proc.pid)
        except (psutil.Error, KeyError, ValueError, TypeError):
            continue
    for sock in runtime.get("sockets", []):
        if isinstance(sock, str) and sock.startswith("/tmp/hivemind-") and sock.endswith(".sock"):
            Path(sock).unlink(missing_ok=True)
    return killed


def describe_children(pids: list[int]) -> tuple[list[dict[str, Any]], list[str]]:
    """(children, unix socket paths) of our helper processes, for the runtime file."""
    children, sockets = [], []
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            children.append({"pid": pid, "create_time": proc.create_time(), "name": proc.name()})
            for arg in proc.cmdline():
                if "/unix/tmp/hivemind-" in arg:
                    sockets.append(arg[arg.index("/unix") + len("/unix"):])
        except psutil.Error:
            continue
    return children, sockets
