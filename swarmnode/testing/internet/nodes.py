"""Real `swarmnode run` daemons on the hosts of an emulated internet, as a user would start them.

Each node is a process started inside its host's namespace with its own home folder; its status
is read with `swarmnode status --json` run inside the same namespace (the status endpoint listens
on the host's loopback, like on a user's machine).
"""
from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from swarmnode.home import NodeHome, init_home, read_runtime
from swarmnode.node.local_swarm import child_environment, python_module_command
from swarmnode.testing.internet.topology import Host, Internet


class NodeFailed(RuntimeError):
    """A node exited, or did not start in time."""


class InternetNode:
    def __init__(self, internet: Internet, host: Host, root: Path, config_path: Path,
                 args: list[str] | None = None, env: dict[str, str] | None = None, command: str = "run"):
        self.internet = internet
        self.host = host
        self.home = NodeHome(root)
        self.config_path = config_path
        self.args = list(args or [])
        self.env = dict(env or {})
        self.command = command
        self.console_log = root.parent / f"{root.name}.console.log"
        self.process: subprocess.Popen | None = None
        self.started_at = 0.0

    @property
    def name(self) -> str:
        return self.host.name

    def start(self) -> None:
        """Start the daemon (its home is made on first start); returns at once."""
        if self.process is not None and self.process.poll() is None:
            raise NodeFailed(f"{self.name} is still running")
        init_home(self.home.root, self.config_path.read_text(encoding="utf-8"))
        # `run` reads --config; `bootstrap` reads the config.yaml its home was made with
        config = ["--config", str(self.config_path)] if self.command == "run" else []
        argv = python_module_command("swarmnode", self.command, "--home", str(self.home.root), *config, *self.args)
        env = child_environment(self.env)
        with open(self.console_log, "ab") as console:
            self.started_at = time.monotonic()
            self.process = self.internet.popen(self.host, argv, stdout=console, stderr=subprocess.STDOUT, env=env)

    def wait_ready(self, timeout: float = 120.0) -> dict[str, Any]:
        """Wait until its status endpoint answers; return the status document."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._raise_if_exited()
            if read_runtime(self.home).get("status_url"):
                status = self.status()
                if status is not None:
                    return status
            time.sleep(0.5)
        raise NodeFailed(f"{self.name} did not start within {timeout:.0f}s ({self.tail()})")

    def _raise_if_exited(self) -> None:
        if self.process is not None and self.process.poll() is not None:
            raise NodeFailed(f"{self.name} exited with code {self.process.returncode}: {self.tail()}")

    def log_tail(self, lines: int = 12) -> str:
        """The last lines of the node's own log (node.log), for a failure's message."""
        return last_lines(self.home.node_log, lines, "no node.log")

    def tail(self, lines: int = 3) -> str:
        return last_lines(self.console_log, lines, "no output")

    def status(self) -> dict[str, Any] | None:
        """`swarmnode status --json` inside the host, or None if the daemon does not answer."""
        done = self.internet.run(self.host, python_module_command("swarmnode", "status", "--json",
                                                                   "--home", str(self.home.root)),
                                 timeout=60, env=child_environment())
        if done.returncode != 0:
            return None
        try:
            return json.loads(done.stdout)
        except json.JSONDecodeError:
            return None

    def start_probe(self, interval_s: float = 0.5) -> Path:
        """Record its status every `interval_s` (probe.py) into a JSON-lines file; returns the path."""
        path = self.home.root.parent / f"{self.home.root.name}.probe.jsonl"
        with open(path, "ab") as out:
            self.internet.popen(self.host, python_module_command("swarmnode.testing.internet.probe", "--home",
                                                                  str(self.home.root), "--interval", str(interval_s)), stdout=out,
                                stderr=subprocess.DEVNULL, env=child_environment())
        return path

    def multiaddrs(self) -> list[str]:
        status = self.status() or {}
        return list(status.get("multiaddrs", []))

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)
            self.process.wait(timeout=30)

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM, then SIGKILL after `timeout`; the exit code."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        return self.process.returncode


def last_lines(path: Path, lines: int, missing: str) -> str:
    """The last `lines` lines of `path` joined on one line, or `missing` if there is no such file."""
    if not path.exists():
        return missing
    return " | ".join(path.read_text(errors="replace").strip().splitlines()[-lines:])
