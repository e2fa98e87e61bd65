"""Reading a daemon's status endpoint (used by the CLI and the local swarm view)."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import psutil

from swarmnode.home import NodeHome, is_bootstrap_home, read_runtime, start_command


class NoDaemon(Exception):
    """No daemon answers for this home / URL; `str(e)` is the one line to show."""


def no_daemon_line(home: NodeHome) -> str:
    """No daemon runs for `home`: what it is the home of, and the command that starts it."""
    if is_bootstrap_home(home):
        return (f"no swarmnode daemon is running for home {home.root}, a bootstrap node's (its flags: "
                f"{home.bootstrap_file}); start it with: {start_command(home)}")
    return f"no swarmnode daemon is running for home {home.root} (start one with: {start_command(home)})"


def status_url_for_home(home: NodeHome) -> str:
    runtime = read_runtime(home)
    url, pid = runtime.get("status_url"), runtime.get("pid")
    if not url or not isinstance(pid, int) or not psutil.pid_exists(pid):
        raise NoDaemon(no_daemon_line(home))
    return url


def fetch(url: str, path: str = "/status", timeout: float = 3.0) -> dict[str, Any]:
    try:
        with urllib.request.urlopen(url.rstrip("/") + path, timeout=timeout) as resp:
            return json.loads(resp.read())
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as e:
        raise NoDaemon(f"no swarmnode daemon answers at {url} ({getattr(e, 'reason', e)}); is its daemon (`swarmnode run` or `swarmnode bootstrap`) running?") from None
    except ValueError:
        raise NoDaemon(f"{url} answered, but not with swarmnode status JSON") from None
