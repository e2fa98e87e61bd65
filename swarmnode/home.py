"""The node home: key files, config, the runtime file a running daemon leaves for the CLI, the
record of the last run (did it end cleanly?) and the logs folder."""
from __future__ import annotations

import fcntl
import json
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swarmnode.config import default_config_text
from swarmnode.identity import PASSPHRASE_ENV, create_node_key, create_p2p_identity

DEFAULT_HOME = Path("~/.swarmnode")
HOME_ENV = "SWARMNODE_HOME"


def home_source(home: Path | None) -> str:
    """Where the home given to resolve_home came from, for error lines."""
    if home is not None:
        return "--home"
    return f"environment variable {HOME_ENV}" if os.environ.get(HOME_ENV) else f"the default home {DEFAULT_HOME}"


def resolve_home(home: Path | None) -> Path:
    if home is None:
        home = Path(os.environ.get(HOME_ENV, str(DEFAULT_HOME)))
    return home.expanduser().resolve()


@dataclass(frozen=True)
class NodeHome:
    root: Path

    @property
    def node_key(self) -> Path:
        return self.root / "node_key.pem"

    @property
    def p2p_identity(self) -> Path:
        return self.root / "p2p_identity.key"

    @property
    def config(self) -> Path:
        return self.root / "config.yaml"

    @property
    def run_dir(self) -> Path:
        return self.root / "run"

    @property
    def runtime_file(self) -> Path:
        return self.run_dir / "runtime.json"

    @property
    def lock_file(self) -> Path:
        return self.run_dir / "daemon.lock"

    @property
    def last_run_file(self) -> Path:
        """The newest run's pid, start time and how it ended (begin_run, end_run)."""
        return self.run_dir / "last_run.json"

    @property
    def logs_dir(self) -> Path:
        return self.root / "logs"

    @property
    def node_log(self) -> Path:
        """What `swarmnode run` logs (rotated to node.log.1, ...; `swarmnode logs` shows it)."""
        return self.logs_dir / "node.log"

    @property
    def base_fingerprint_file(self) -> Path:
        return self.root / BASE_FINGERPRINT_FILE

    @property
    def bootstrap_file(self) -> Path:
        """The flags `swarmnode bootstrap` last started it with: there only in a bootstrap node's home."""
        return self.root / BOOTSTRAP_FILE


@dataclass(frozen=True)
class InitResult:
    home: NodeHome
    created: tuple[str, ...]
    kept: tuple[str, ...]


def init_home(root: Path, config_text: str | None = None) -> InitResult:
    """Create what is missing in a node home; never overwrite a key or a config."""
    home = NodeHome(root)
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o700)
    created, kept = [], []
    passphrase = os.environ.get(PASSPHRASE_ENV) or None
    for name, path, make in (
        ("node key", home.node_key, lambda p: create_node_key(p, passphrase)),
        ("libp2p identity", home.p2p_identity, create_p2p_identity),
    ):
        (created if make(path) else kept).append(f"{name} {path}")
    if home.config.exists():
        kept.append(f"config {home.config}")
    else:
        home.config.write_text(config_text if config_text is not None else default_config_text(), encoding="utf-8")
        created.append(f"config {home.config}")
    return InitResult(home, tuple(created), tuple(kept))


class HomeLocked(Exception):
    pass


class DaemonLock:
    """An flock on the home's run dir: one daemon per home. The kernel drops it if we die."""

    def __init__(self, home: NodeHome):
        self._home = home
        self._fd: int | None = None

    def acquire(self) -> None:
        self._home.run_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._home.lock_file, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            pid = read_runtime(self._home).get("pid", "?")
            raise HomeLocked(
                f"another swarmnode daemon (pid {pid}) is running with home {self._home.root}; "
                f"stop it first or pass another --home"
            ) from None
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _write_json(path: Path, info: dict[str, Any]) -> None:
    """Atomically replace `path` (a reader never sees half a file; writers never share a temporary file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(info, f, indent=2)
            f.flush()
            os.fsync(f.fileno())  # else a power cut can leave the renamed file empty
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_runtime(home: NodeHome, info: dict[str, Any]) -> None:
    """Atomically replace the runtime file (the CLI may read it at any moment)."""
    _write_json(home.runtime_file, info)


def read_runtime(home: NodeHome) -> dict[str, Any]:
    return _read_json(home.runtime_file) or {}


def begin_run(home: NodeHome, pid: int, now: float) -> dict[str, Any] | None:
    """Record that a run of this home started (call it holding the DaemonLock). Returns the
    previous run's record, or None when there is none: {"pid", "started_at", "ended"}, where
    `ended` is None for a run that never reached end_run (killed or crashed), else how it ended."""
    previous = _read_json(home.last_run_file)
    _write_json(home.last_run_file, {"pid": pid, "started_at": now, "ended": None})
    return previous


def end_run(home: NodeHome, ended: str, now: float) -> None:
    """Record how this run ended ("cleanly", "failed: ...", "crashed: ..."), for the next start."""
    record = _read_json(home.last_run_file) or {}
    _write_json(home.last_run_file, {**record, "ended": ended, "ended_at": now})


def remove_runtime(home: NodeHome) -> None:
    home.runtime_file.unlink(missing_ok=True)


BASE_FINGERPRINT_FILE = "base_fingerprint.json"
BOOTSTRAP_FILE = "bootstrap.json"  # {"role": "bootstrap", "flags": {"--swarm": ..., ...}}


class BootstrapFileError(Exception):
    """A bootstrap.json that cannot be read; `str(e)` is the one line to show."""


def is_bootstrap_home(home: NodeHome) -> bool:
    """The home is a bootstrap node's (`swarmnode bootstrap` saved its flags there)."""
    return home.bootstrap_file.is_file()


def start_command(home: NodeHome) -> str:
    """The command that starts this home's daemon, for hints."""
    command = "bootstrap" if is_bootstrap_home(home) else "run"
    return f"swarmnode {command} --home {home.root}"


def read_bootstrap_flags(home: NodeHome) -> dict[str, Any] | None:
    """The flags saved in the home's bootstrap.json (flag name -> value), None when it has none;
    BootstrapFileError for one that is not such a file."""
    path = home.bootstrap_file
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise BootstrapFileError(f"cannot read {path}: {e.strerror or e}; make it readable") from None
    except ValueError:
        data = None
    data = data if isinstance(data, dict) else None
    flags = data.get("flags") if data is not None and data.get("role") == "bootstrap" else None
    if not isinstance(flags, dict):
        raise BootstrapFileError(f"{path} is not a bootstrap node's saved flags (expected "
                                 '{"role": "bootstrap", "flags": {...}}); fix it, or delete it and pass the flags again')
    return flags


def write_bootstrap_flags(home: NodeHome, flags: dict[str, Any]) -> None:
    """Save the flags a bootstrap node runs with, atomically: its role and its next starts' defaults."""
    _write_json(home.bootstrap_file, {"role": "bootstrap", "flags": flags})
BASE_FINGERPRINT_KEEP = 16  # keys kept in the cache file (the newest)
_FINGERPRINT = re.compile(r"[0-9a-f]{16}")


def _read_fingerprints(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str) and _FINGERPRINT.fullmatch(v)}


def read_cached_base_fingerprint(home_root: Path, key: str) -> str | None:
    """The fingerprint cached in the home for `key`, or None when it was never computed here."""
    return _read_fingerprints(Path(home_root) / BASE_FINGERPRINT_FILE).get(key)


def cached_base_fingerprint(home_root: Path, key: str, compute: Callable[[], str]) -> str:
    """The base-weights fingerprint for `key` (policy.loading.base_weights_key), computed once per home.

    `<home>/base_fingerprint.json` maps keys to fingerprints; a hit returns without calling
    `compute`. A missing, unreadable or corrupt file (or entry) is recomputed and the file
    rewritten atomically (a reader never sees half a file), keeping the newest keys.
    Failing to write the cache is not an error: the fingerprint is returned all the same.
    """
    path = Path(home_root) / BASE_FINGERPRINT_FILE
    cached = _read_fingerprints(path)
    if key in cached:
        return cached[key]
    fingerprint = compute()
    cached[key] = fingerprint
    kept = dict(list(cached.items())[-BASE_FINGERPRINT_KEEP:])
    try:
        _write_json(path, kept)
    except OSError:
        pass
    return fingerprint
