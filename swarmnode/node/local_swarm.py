"""N real `swarmnode run` processes on 127.0.0.1: homes under one folder, the first as bootstrap
(or, with join_through_first=False, every node joining only through the initial peers given)."""
from __future__ import annotations

import ctypes
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from swarmnode.home import NodeHome, init_home, read_runtime
from swarmnode.status.client import NoDaemon, fetch
from swarmnode.utils.child_process import child_environment, python_module_command  # noqa: F401 - re-exported

START_TIMEOUT_S = 90.0


class LocalSwarmError(Exception):
    pass


def exited_row(name: str, exit_code: int | None) -> dict[str, Any]:
    """The table row of a node whose process has ended: `failed (exit N)` if it stopped on its own
    with an error (e.g. its training failed), else `not running`."""
    failed = exit_code is not None and exit_code > 0
    return {"name": name, "error": f"failed (exit {exit_code})" if failed else "not running",
            "exited": True, "exit_code": exit_code}


def _die_with_parent() -> None:
    # A node of a local swarm gets SIGTERM (clean shutdown) if the launcher dies.
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(1, signal.SIGTERM, 0, 0, 0)


def wait_ready(node: LocalNode, timeout: float = START_TIMEOUT_S) -> dict[str, Any]:
    """Wait until the node's status endpoint answers; return its runtime info."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if node.process is not None and node.process.poll() is not None:
            out = node.stdout_path
            tail = out.read_text(errors="replace").strip().splitlines()[-1:] if out.exists() else []
            raise LocalSwarmError(f"{node.name} exited with code {node.process.returncode}: {' '.join(tail)} "
                                  f"(its output: {out}; its log: {node.log_path})")
        runtime = read_runtime(node.home)
        if runtime.get("pid") == (node.process.pid if node.process else None) and runtime.get("status_url"):
            try:
                fetch(runtime["status_url"], timeout=1.0)
                return runtime
            except NoDaemon:
                pass
        time.sleep(0.2)
    raise LocalSwarmError(f"{node.name} did not start within {timeout:.0f}s (its output: {node.stdout_path}; "
                          f"its log: {node.log_path})")


@dataclass
class LocalNode:
    index: int
    home: NodeHome
    process: subprocess.Popen | None = None

    @property
    def name(self) -> str:
        return f"node{self.index}"

    @property
    def log_path(self) -> Path:
        """The node's own log (`swarmnode logs --home HOME`)."""
        return self.home.node_log

    @property
    def stdout_path(self) -> Path:
        """The process's console output of its latest start (what it printed before its log was open, too)."""
        return self.home.logs_dir / "stdout.log"


class LocalSwarm:
    def __init__(self, root: Path, size: int, config_path: Path, extra_args: list[str] | None = None,
                 node_env: Callable[[int], dict[str, str]] | None = None,
                 node_args: Callable[[int], list[str]] | None = None,
                 node_module: Callable[[int], str] | None = None, join_through_first: bool = True,
                 node_preexec: Callable[[int], Callable[[], None]] | None = None):
        self.root = root
        self.config_path = config_path
        self.extra_args = list(extra_args or [])
        # Per-node environment, e.g. SWARMNODE__TRAINING__DATA_SEED so each node draws its own questions.
        self.node_env = node_env or (lambda index: {})
        # Per-node `swarmnode run` flags, e.g. --slowdown X for a heterogeneous swarm on one machine.
        self.node_args = node_args or (lambda index: [])
        # The module each node runs as `python -m <module> run ...` (a test's wrapper of the CLI).
        self.node_module = node_module or (lambda index: "swarmnode")
        # Run in node i's process before it execs, e.g. joining a cgroup with a CPU quota of its own.
        self.node_preexec = node_preexec
        self.nodes = [LocalNode(i, NodeHome(root / f"node{i}")) for i in range(size)]
        # False: no node is given node0's address; they join through extra_args' --initial-peer
        # (a `swarmnode bootstrap` node, say) and find each other through it.
        self.join_through_first = join_through_first
        self.bootstrap_maddrs: list[str] = []

    # -- processes -----------------------------------------------------------------------------

    def _launch(self, node: LocalNode) -> None:
        init_home(node.home.root, self.config_path.read_text(encoding="utf-8"))
        args = python_module_command(self.node_module(node.index), "run", "--home", str(node.home.root),
                                     "--config", str(self.config_path))
        if node.index > 0:
            for maddr in self.bootstrap_maddrs:
                args += ["--initial-peer", maddr]
        args += self.extra_args + self.node_args(node.index)
        node.stdout_path.parent.mkdir(parents=True, exist_ok=True)
        console = open(node.stdout_path, "wb")  # this start's console only: the log file keeps the history
        env = child_environment(self.node_env(node.index))
        preexec = _die_with_parent
        if self.node_preexec is not None:
            first = self.node_preexec(node.index)
            preexec = lambda: (first(), _die_with_parent())  # noqa: E731
        node.process = subprocess.Popen(args, stdout=console, stderr=subprocess.STDOUT, env=env, preexec_fn=preexec)
        console.close()

    def wait_ready(self, node: LocalNode, timeout: float = START_TIMEOUT_S) -> dict[str, Any]:
        return wait_ready(node, timeout)

    def start(self, on_progress: Callable[[str], None] = lambda _: None) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        if not self.join_through_first:
            for node in self.nodes:
                self._launch(node)
            for node in self.nodes:
                self.wait_ready(node)
                on_progress(f"{node.name} is up")
            return
        first = self.nodes[0]
        self._launch(first)
        on_progress(f"started {first.name} (bootstrap), waiting for its address")
        self.bootstrap_maddrs = self.wait_ready(first)["multiaddrs"]
        for node in self.nodes[1:]:
            self._launch(node)
        for node in self.nodes[1:]:
            self.wait_ready(node)
            on_progress(f"{node.name} is up")

    def restart(self, index: int) -> None:
        node = self.nodes[index]
        if node.process is not None and node.process.poll() is None:
            raise LocalSwarmError(f"{node.name} is still running")
        self._launch(node)
        self.wait_ready(node)

    def kill(self, index: int, sig: int = signal.SIGKILL) -> None:
        proc = self.nodes[index].process
        if proc is not None and proc.poll() is None:
            proc.send_signal(sig)
            proc.wait(timeout=30)

    def stop(self, timeout: float = 20.0) -> None:
        running = [n.process for n in self.nodes if n.process is not None and n.process.poll() is None]
        for proc in running:
            proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for proc in running:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def __enter__(self) -> "LocalSwarm":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- status --------------------------------------------------------------------------------

    def training_done(self, rows: list[dict[str, Any]]) -> bool:
        """Every node has finished its training steps (training.max_steps) or failed."""
        return all("error" not in r and (r.get("training") or {}).get("phase") in ("done", "stopped")
                   or str((r.get("training") or {}).get("phase", "")).startswith("failed")
                   or r.get("exit_code") not in (None, 0) for r in rows)

    def poll(self) -> list[dict[str, Any]]:
        """One row per node: its status document, or {"name", "error"} if it does not answer."""
        rows = []
        for node in self.nodes:
            url = read_runtime(node.home).get("status_url")
            alive = node.process is not None and node.process.poll() is None
            if not alive:
                rows.append(exited_row(node.name, node.process.returncode if node.process is not None else None))
                continue
            try:
                rows.append({"name": node.name, **fetch(url, timeout=1.0)} if url else {"name": node.name, "error": "starting"})
            except NoDaemon:
                rows.append({"name": node.name, "error": "not answering"})
        return rows
