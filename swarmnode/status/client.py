"""Reading a daemon's status endpoint (used by the CLI and the local swarm view)."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import psutil

from swarmnode.home import NodeHome, read_runtime


class NoDaemon(Exception):
    """No daemon answers for this home / URL; `str(e)` is the one line to show."""


def status_url_for_home(home: NodeHome) -> str:
    runtime = read_runtime(home)
    url, pid = runtime.get("status_url"), runtime.get("pid")
    if not url or not isinstance(pid, int) or not psutil.pid_exists(pid):
        raise NoDaemon(f"no swarmnode daemon is running for home {home.root} (start one with: swarmnode run --home {home.root})")
    return url


def fetch(url: str, path: str = "/status", timeout: float = 3.0) -> dict[str, Any]:
    try:
        with urllib.request.urlopen(url.rstrip("/") + path, timeout=timeout) as resp:
            return json.loads(resp.read())
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as e:
        raise NoDaemon(f"no swarmnode daemon answers at {url} ({getattr(e, 'reason', e)}); is `swarmnode run` running?") from None
    except ValueError:
        raise NoDaemon(f"{url} answered, but not with swarmnode status JSON") from None
