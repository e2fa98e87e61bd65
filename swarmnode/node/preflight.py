"""What `swarmnode run` checks before it starts anything (no p2pd, no lock, no runtime file yet).

Each problem becomes one line naming the value, where it came from (a flag, an environment
variable, the config file: config.ValueSources) and the fix. `probe_start` does the I/O (bind a
port, write a file in the home, look for a model) and returns what it found; `start_problems`
turns what was found into lines, without I/O.
"""
from __future__ import annotations

import difflib
import errno
import os
import shutil
import socket
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from swarmnode.assets import BUNDLED_PREFIX, bundled_names
from swarmnode.config import NodeConfig, ValueSources
from swarmnode.node.home_model import HomeModelFacts, home_model_problem, probe_home_model
from swarmnode.tasks import UnknownTask, get_task

# Below this much free space in the home's file system a node cannot keep its stores and
# checkpoints for long: refuse to start rather than fail on the first checkpoint.
MIN_FREE_BYTES = 100 * 2**20
LOCAL_PATH_PREFIXES = ("/", "./", "../", "~")


@dataclass(frozen=True)
class ModelLookup:
    """What could be found out offline about model.name_or_path."""

    kind: str  # "bundled", "folder" or "hub"
    found: bool
    detail: str = ""  # why not found (folder: "does not exist" / "has no config.json"; hub: the reason)
    known: tuple[str, ...] = ()  # bundled: the bundled names


@dataclass(frozen=True)
class StartFacts:
    """What probe_start found; None: not probed (nothing to check)."""

    home_write_error: OSError | None = None
    free_bytes: int | None = None
    status_port_error: OSError | None = None
    host_port_errors: dict[str, OSError] = field(default_factory=dict)  # host multiaddr -> bind error
    model: ModelLookup | None = None
    cuda_devices: int | None = None  # GPUs torch sees, probed only for a cuda model.device
    home_model: HomeModelFacts | None = None  # the model the home's newest checkpoint belongs to


def _write_error(folder: Path) -> OSError | None:
    try:
        fd, name = tempfile.mkstemp(prefix=".swarmnode-write-check-", dir=folder)
    except OSError as e:
        e.filename = str(folder)  # the folder that refused, not the name of the file tried
        return e
    os.close(fd)
    os.unlink(name)
    return None


def _bind_error(host: str, port: int) -> OSError | None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers bind: TIME_WAIT is no conflict
            s.bind((host, port))
    except OSError as e:
        return e
    return None


def tcp_listen_address(maddr: str) -> tuple[str, int] | None:
    """("0.0.0.0", 31337) for /ip4/0.0.0.0/tcp/31337 (port 0: any port, the address is still
    checked); None for another kind of address."""
    parts = maddr.split("/")
    if len(parts) < 5 or parts[1] not in ("ip4", "ip6") or parts[3] != "tcp" or not parts[4].isdigit():
        return None
    return parts[2], int(parts[4])


def lookup_model(name: str) -> ModelLookup:
    """Offline only: a bundled name among the assets, a local folder with config.json, a hub id
    well formed (and, with HF_HUB_OFFLINE set, in the local cache). Nothing is downloaded."""
    if name.startswith(BUNDLED_PREFIX):
        known = bundled_names()
        return ModelLookup("bundled", name[len(BUNDLED_PREFIX):] in known, known=known)
    folder = Path(name).expanduser()
    if name.startswith(LOCAL_PATH_PREFIXES) or folder.exists():
        if not folder.is_dir():
            return ModelLookup("folder", False, "does not exist")
        return ModelLookup("folder", (folder / "config.json").is_file(), "has no config.json")
    from huggingface_hub import try_to_load_from_cache
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(name)
    except HFValidationError:  # its text runs to several sentences; the expected forms say enough
        return ModelLookup("hub", False, "is neither a folder nor a hub id (expected name or owner/name)")
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        cached = try_to_load_from_cache(name, "config.json")
        return ModelLookup("hub", isinstance(cached, str), "is not in the local Hugging Face cache and HF_HUB_OFFLINE is set")
    return ModelLookup("hub", True)  # online: whether the hub has it is known only once it loads


def cuda_device_count() -> int:
    """The CUDA GPUs torch sees (0 without CUDA)."""
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def cuda_shortfall(device: str, cuda_devices: int) -> str | None:
    """What torch lacks for a cuda `device` (cuda, cuda:<index>) given the GPUs it sees, as
    "torch sees no CUDA GPU" / "torch sees only N CUDA GPU(s)"; None when the GPU is there."""
    index = device.partition(":")[2]
    wanted = int(index) + 1 if index.isdigit() else 1
    if cuda_devices >= wanted:
        return None
    return "torch sees " + ("no CUDA GPU" if cuda_devices == 0 else f"only {cuda_devices} CUDA GPU(s)")


def device_problem(device: str) -> str | None:
    """What is wrong with a device name (cpu, cuda, cuda:<index>) on this machine, or None."""
    kind, colon, index = device.partition(":")
    if kind == "cpu" and not colon:
        return None
    if kind != "cuda" or (colon and not index.isdigit()):
        return "expected cpu, cuda or cuda:<index>"
    return cuda_shortfall(device, cuda_device_count())


def probe_start(config: NodeConfig, home_root: Path) -> StartFacts:
    """Everything start_problems judges, found with the least I/O that tells it."""
    home_exists = home_root.is_dir()
    write_error = None
    if home_exists:
        write_error = _write_error(home_root)
        run_dir = home_root / "run"
        if write_error is None and run_dir.is_dir():
            write_error = _write_error(run_dir)
    status_port = config.status.port
    host_errors = {}
    for maddr in config.network.host_maddrs:
        address = tcp_listen_address(maddr)
        if address is not None and (error := _bind_error(*address)) is not None:
            host_errors[maddr] = error
    model = config.model.name_or_path
    return StartFacts(
        home_write_error=write_error,
        free_bytes=shutil.disk_usage(home_root).free if home_exists else None,
        status_port_error=_bind_error(config.status.host, status_port) if status_port else None,
        host_port_errors=host_errors,
        model=lookup_model(model) if model else None,
        cuda_devices=cuda_device_count() if model and config.model.device.startswith("cuda") else None,
        home_model=probe_home_model(config, home_root) if home_exists else None,
    )


def _oserror_text(error: OSError) -> str:
    return error.strerror or str(error)


def _task_problems(config: NodeConfig, sources: ValueSources) -> list[str]:
    problems = []
    for name in config.training.tasks:
        try:
            get_task(name)
        except UnknownTask as e:
            reason = str(e.args[0]) if e.args else name
            problems.append(f"{reason} (from {sources.of('training.tasks')}); {sources.fix('training.tasks')}")
    return problems


def _model_problem(config: NodeConfig, lookup: ModelLookup, sources: ValueSources) -> str | None:
    if lookup.found:
        return None
    name = config.model.name_or_path
    where = f"(from {sources.of('model.name_or_path')}); {sources.fix('model.name_or_path')}"
    if lookup.kind == "bundled":
        wanted = name[len(BUNDLED_PREFIX):] if name else ""
        close = difflib.get_close_matches(wanted, lookup.known, n=1)
        hint = f"did you mean bundled:{close[0]}? " if close else ""
        return f"no bundled model {wanted!r} {where} ({hint}bundled: {', '.join(lookup.known)})"
    if lookup.kind == "folder":
        return f"model folder {name} {lookup.detail} {where}"
    return f"model {name!r} {lookup.detail} {where}"


def _model_device_problem(config: NodeConfig, cuda_devices: int, sources: ValueSources) -> str | None:
    device = config.model.device
    shortfall = cuda_shortfall(device, cuda_devices)
    if shortfall is None:
        return None
    return (f"model.device is {device} but {shortfall} (from {sources.of('model.device')}); "
            f"{sources.fix('model.device')} (e.g. cpu)")


def _port_problems(config: NodeConfig, facts: StartFacts, sources: ValueSources) -> list[str]:
    problems = []
    if facts.status_port_error is not None:
        problems.append(
            f"status port {config.status.port} on {config.status.host} cannot be used: "
            f"{_oserror_text(facts.status_port_error)} (from {sources.of('status.port')}); "
            f"{sources.fix('status.port')} to a free port, or 0 for any free port")
    for maddr, error in facts.host_port_errors.items():
        host, port = maddr.split("/")[2], maddr.split("/")[4]
        if error.errno == errno.EADDRNOTAVAIL:  # else p2pd fails to listen and the start blames its timeout
            problems.append(
                f"listen address {host} ({maddr}) is not an address of this machine: {_oserror_text(error)} "
                f"(from {sources.of('network.host_maddrs')}); {sources.fix('network.host_maddrs')} to one of "
                "this machine's addresses, or 0.0.0.0 for all of them")
            continue
        problems.append(
            f"p2p port {port} ({maddr}) cannot be used: {_oserror_text(error)} "
            f"(from {sources.of('network.host_maddrs')}); {sources.fix('network.host_maddrs')} to a free port, "
            "or 0 for any free port")
    return problems


def _home_problems(home_root: Path, facts: StartFacts, home_source: str) -> list[str]:
    if facts.home_write_error is not None:
        error = facts.home_write_error
        inside = "" if str(error.filename or home_root) == str(home_root) else f" (in {error.filename})"
        return [f"node home {home_root} is not writable: {_oserror_text(error)}{inside} (from {home_source}); "
                "make it writable or pass another --home"]
    if facts.free_bytes is not None and facts.free_bytes < MIN_FREE_BYTES:
        return [f"only {facts.free_bytes / 2**20:.0f} MiB free on the disk of node home {home_root} (from {home_source}); "
                f"a node needs at least {MIN_FREE_BYTES // 2**20} MiB: free some space or pass another --home"]
    return []


def start_problems(config: NodeConfig, facts: StartFacts, sources: ValueSources, home_root: Path,
                   home_source: str) -> list[str]:
    """One line per problem found before start, each naming the value, its source and the fix."""
    problems = _home_problems(home_root, facts, home_source)
    problems += _task_problems(config, sources)
    if facts.model is not None and (line := _model_problem(config, facts.model, sources)):
        problems.append(line)
    if facts.cuda_devices is not None and (line := _model_device_problem(config, facts.cuda_devices, sources)):
        problems.append(line)
    if facts.home_model is not None and (line := home_model_problem(config, facts.home_model, sources, home_root)):
        problems.append(line)
    return problems + _port_problems(config, facts, sources)
