"""Training checkpoints: model, optimizer, version, RNG and stream position as safetensors + JSON.

A checkpoint is written into a temporary folder and renamed into place, then the `latest` file
is replaced atomically: a crash at any moment leaves the previous checkpoint intact and
`latest` pointing at a complete one.
"""
from __future__ import annotations

import json
import logging
import os
import random
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

log = logging.getLogger("swarmnode.checkpoints")
LATEST = "latest"
OUTER_FILE = "outer.safetensors"
KEEP = 2  # complete checkpoints kept on disk


@dataclass
class TrainingState:
    """What a resumed trainer needs besides the weights."""

    version: int
    steps: int
    stream_position: int
    extra: dict[str, Any]


def flatten_optimizer(state: dict[str, Any]) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """An optimizer state_dict as (tensors for safetensors, JSON-able rest)."""
    tensors, scalars = {}, {}
    for index, slots in state["state"].items():
        for name, value in slots.items():
            key = f"state.{index}.{name}"
            if torch.is_tensor(value):
                tensors[key] = value.detach().contiguous().cpu()
            else:
                scalars[key] = value
    return tensors, {"param_groups": state["param_groups"], "scalars": scalars}


def unflatten_optimizer(tensors: dict[str, torch.Tensor], meta: dict[str, Any]) -> dict[str, Any]:
    state: dict[int, dict[str, Any]] = {}
    for key, value in [*tensors.items(), *meta["scalars"].items()]:
        _, index, name = key.split(".", 2)
        state.setdefault(int(index), {})[name] = value
    return {"state": state, "param_groups": meta["param_groups"]}


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save_checkpoint(root: Path, model_state: dict[str, torch.Tensor], optimizer_state: dict[str, Any],
                    state: TrainingState, outer_state: dict[str, torch.Tensor] | None = None,
                    model_record: dict[str, str] | None = None) -> Path:
    """Write checkpoint v<version> under `root` and point `latest` at it. Blocking.

    `model_record`: the model the checkpoint belongs to (store/checkpoint_model.py), kept in state.json."""
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"v{state.version:08d}"
    tmp = root / f".tmp-{final.name}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        weights = {k: v.detach().contiguous().cpu() for k, v in model_state.items()}
        save_file(weights, str(tmp / "model.safetensors"))
        opt_tensors, opt_meta = flatten_optimizer(optimizer_state)
        save_file(opt_tensors, str(tmp / "optimizer.safetensors"))
        if outer_state is not None:  # gradient summaries' anchor, momentum and residual
            save_file({k: v.detach().contiguous().cpu() for k, v in outer_state.items()}, str(tmp / OUTER_FILE))
        meta = {
            "version": state.version,
            "steps": state.steps,
            "stream_position": state.stream_position,
            "extra": state.extra,
            "optimizer": opt_meta,
            "rng": {"torch": torch.get_rng_state().tolist(), "python": _python_rng_state()},
        }
        if model_record is not None:
            meta["model"] = model_record
        (tmp / "state.json").write_text(json.dumps(meta), encoding="utf-8")
        for f in tmp.iterdir():
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)  # a full disk must not keep the half-written copy too
        raise
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    pointer = root / f".{LATEST}.tmp"
    pointer.write_text(final.name, encoding="utf-8")
    os.replace(pointer, root / LATEST)
    _fsync_dir(root)
    for old in sorted(p for p in root.glob("v*") if p.is_dir())[:-KEEP]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def _python_rng_state() -> list:
    version, internal, gauss = random.getstate()
    return [version, list(internal), gauss]


def latest_checkpoint(root: Path) -> Path | None:
    """The checkpoint `latest` points at; when the pointer is missing, damaged or points at no
    complete checkpoint, the newest complete v* folder (folders are renamed into place whole);
    None when there is none."""
    try:
        path = root / (root / LATEST).read_text(encoding="utf-8").strip()
    except (OSError, ValueError):  # ValueError: a pointer that is not even text
        path = None
    if path is not None and (path / "state.json").is_file():
        return path
    complete = sorted(p for p in root.glob("v*") if (p / "state.json").is_file()) if root.is_dir() else []
    return complete[-1] if complete else None


def load_checkpoint(path: Path, model, optimizer) -> TrainingState:
    """Restore weights, optimizer and RNG from `path`; return the training state."""
    model.load_state_dict(load_file(str(path / "model.safetensors")))
    meta = json.loads((path / "state.json").read_text(encoding="utf-8"))
    state = unflatten_optimizer(load_file(str(path / "optimizer.safetensors")), meta["optimizer"])
    # How the optimizer steps (fused, foreach) is this process's choice, not the checkpoint's:
    # load_state_dict would otherwise bring back the flags of whichever version saved it. Set
    # before loading, so that torch places the step counters where the fused kernel wants them.
    for saved, current in zip(state["param_groups"], optimizer.param_groups):
        for flag in ("fused", "foreach"):
            if flag in current:
                saved[flag] = current[flag]
    optimizer.load_state_dict(state)
    torch.set_rng_state(torch.tensor(meta["rng"]["torch"], dtype=torch.uint8))
    version, internal, gauss = meta["rng"]["python"]
    random.setstate((version, tuple(internal), gauss))
    return TrainingState(meta["version"], meta["steps"], meta["stream_position"], meta["extra"])


def load_outer_state(path: Path) -> dict[str, torch.Tensor] | None:
    """The outer loop's tensors saved with checkpoint `path`, or None when it has none."""
    outer = path / OUTER_FILE
    return load_file(str(outer)) if outer.is_file() else None


class BackgroundCheckpointer:
    """Writes checkpoints on its own thread from snapshots taken on the trainer's thread.

    The snapshot (a copy of weights and optimizer state) is cheap for the models a CPU node
    trains; the disk writes happen off the training path. One write at a time: a request made
    while one is running waits for it.

    A failed write is logged and counted: `consecutive_failures` (reset by a write that succeeds),
    `last_error` ("ExceptionType: message", None after a success).
    The owner decides when too many failures in a row are fatal.
    """

    def __init__(self, root: Path):
        self.root = root
        # The model every checkpoint belongs to (CheckpointModel.to_json()), set once it is known.
        self.model_record: dict[str, str] | None = None
        self._thread: threading.Thread | None = None
        self.last_path: Path | None = None
        self.last_error: str | None = None
        self.consecutive_failures = 0

    def save(self, model, optimizer, state: TrainingState, outer_state: dict[str, torch.Tensor] | None = None) -> None:
        """`outer_state`: tensors the caller already copied (they are written as they are)."""
        model_state = _clone_tree(dict(model.state_dict()))
        optimizer_state = _clone_tree(optimizer.state_dict())
        self.wait()

        def write() -> None:
            try:
                path = save_checkpoint(self.root, model_state, optimizer_state, state, outer_state, self.model_record)
            except BaseException as e:  # noqa: BLE001 - counted here, judged by the owner
                self._failed(e, state.version)
            else:
                self.last_path, self.last_error, self.consecutive_failures = path, None, 0

        self._thread = threading.Thread(target=write, name="swarmnode-checkpoint", daemon=False)
        self._thread.start()

    def _failed(self, error: BaseException, version: int) -> None:
        self.last_error = f"{type(error).__name__}: {error}"
        self.consecutive_failures += 1
        log.error("checkpoint write of version %d to %s failed (%d in a row): %s",
                  version, self.root / f"v{version:08d}", self.consecutive_failures, self.last_error)

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None


def _clone_tree(value: Any) -> Any:
    if torch.is_tensor(value):
        return value.detach().clone()
    if isinstance(value, dict):
        return {k: _clone_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clone_tree(v) for v in value]
    return value

