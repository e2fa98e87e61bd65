"""A real `swarmnode bootstrap` process on 127.0.0.1, for tests/integration and scripts/bench.

It serves the swarm of a given node config (its swarm name, window and record timings, so that
its record is read and kept like the nodes' own) and announces /dns4/localhost/tcp/<port>: the
nodes join through a DNS address, as users of a public swarm do.
"""
from __future__ import annotations

import signal
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from swarmnode.config import load_config
from swarmnode.home import NodeHome, read_runtime
from swarmnode.node.local_swarm import START_TIMEOUT_S, child_environment, python_module_command, wait_ready


def free_tcp_port() -> int:
    """A TCP port free on 127.0.0.1 now (the kernel's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def swarm_of(config_path: Path) -> tuple[str, float, dict[str, str]]:
    """The swarm name and window of a node config (given as --swarm and --window-s), and the
    environment that gives a bootstrap node its record timings."""
    cfg = load_config(config_path, environ={})
    env = {f"SWARMNODE__RECORDS__{name.upper()}": repr(getattr(cfg.records, name))
           for name in ("publish_interval_s", "ttl_s", "poll_interval_s")}
    return cfg.swarm.name, cfg.swarm.window_s, env


@dataclass
class BootstrapNode:
    """`swarmnode bootstrap --home HOME --port PORT --announce /dns4/localhost/tcp/PORT` serving
    the swarm of `swarm_config` (`window_s`: another --window-s than the swarm's); started, killed and
    started again with the same home and port."""

    home: NodeHome
    port: int
    swarm_config: Path
    process: subprocess.Popen | None = None
    name: str = "bootstrap"
    window_s: float | None = None

    @property
    def log_path(self) -> Path:
        return self.home.node_log

    @property
    def stdout_path(self) -> Path:
        return self.home.root.parent / f"{self.home.root.name}.stdout.log"  # outside the home: written before it exists

    @property
    def announce(self) -> str:
        return f"/dns4/localhost/tcp/{self.port}"

    def start(self, timeout: float = START_TIMEOUT_S, flags: bool = True) -> dict[str, Any]:
        """Start the process (`flags` False: with --home alone, as its home remembers it); return
        its runtime info once its status endpoint answers."""
        swarm, window_s, env = swarm_of(self.swarm_config)
        window_s = window_s if self.window_s is None else self.window_s
        given = ["--port", str(self.port), "--announce", self.announce, "--swarm", swarm, "--window-s", repr(window_s)]
        args = python_module_command("swarmnode", "bootstrap", "--home", str(self.home.root), *(given if flags else []))
        self.stdout_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.stdout_path, "wb") as console:
            self.process = subprocess.Popen(args, stdout=console, stderr=subprocess.STDOUT,
                                            env=child_environment(env))
        return wait_ready(self, timeout)  # type: ignore[arg-type]  # a LocalNode in all it reads

    @property
    def peer_id(self) -> str:
        return read_runtime(self.home)["peer_id"]

    @property
    def address(self) -> str:
        """What users are given: the announced /dns4 address with the peer id."""
        return f"{self.announce}/p2p/{self.peer_id}"

    def processes(self) -> list[psutil.Process]:
        """The daemon and its children (p2pd)."""
        if self.process is None or self.process.poll() is not None:
            return []
        daemon = psutil.Process(self.process.pid)
        return [daemon, *daemon.children(recursive=True)]

    def kill(self, sig: int = signal.SIGKILL, timeout: float = 30.0) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)
            self.process.wait(timeout=timeout)

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM (a clean shutdown), SIGKILL if it does not end within `timeout`."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
