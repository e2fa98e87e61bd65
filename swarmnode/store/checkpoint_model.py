"""Which model a home's checkpoints belong to, and the one line that refuses another.

Each checkpoint's state.json names its model under "model" (`CheckpointModel`): the name it was
configured by, the fingerprint of the base weights training started from, the key it was cached
under (home.cached_base_fingerprint) and the dtype it was taken in, the model type and two
architecture hashes: of the model config, and of the parameter names and shapes (what
load_state_dict needs to match).
A checkpoint of an earlier release has no record: its parameter shapes are read from the
safetensors header of its weights instead (`saved_parameter_shapes`), without reading the
weights.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path

MODEL_KEY = "model"  # the record's key in state.json
RESET_HINT = "swarmnode reset-training --home {home}"


@dataclass(frozen=True)
class CheckpointModel:
    """The model a checkpoint belongs to (see the module docstring)."""

    name_or_path: str
    base_fingerprint: str
    base_weights_key: str
    dtype: str  # the base fingerprint depends on it: fingerprints of two dtypes are not compared
    model_type: str
    architecture: str  # policy.loading.architecture_fingerprint of the model config
    parameters: str  # parameters_fingerprint of the state dict's names and shapes

    def to_json(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: object) -> CheckpointModel | None:
        """The record, or None when `data` is no complete one (a checkpoint of an earlier release)."""
        if not isinstance(data, dict):
            return None
        values = {f.name: data.get(f.name) for f in fields(cls)}
        if not all(isinstance(v, str) for v in values.values()):
            return None
        return cls(**values)


class CheckpointOfAnotherModel(Exception):
    """The home's newest checkpoint belongs to another model than the config names; `str(e)`
    is the one line that says which, and what to do."""


def parameters_fingerprint(shapes: Mapping[str, tuple[int, ...]]) -> str:
    """The parameter names and shapes of a state dict (16 hex chars): equal values load into each other."""
    listed = sorted((name, list(shape)) for name, shape in shapes.items())
    return hashlib.sha256(json.dumps(listed, separators=(",", ":")).encode("utf-8")).hexdigest()[:16]


def read_checkpoint_model(checkpoint: Path) -> CheckpointModel | None:
    """The record in `checkpoint`/state.json; None without one (or with an unreadable file)."""
    try:
        meta = json.loads((checkpoint / "state.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return CheckpointModel.from_json(meta.get(MODEL_KEY)) if isinstance(meta, dict) else None


def saved_parameter_shapes(checkpoint: Path) -> dict[str, tuple[int, ...]] | None:
    """Names and shapes of the weights in `checkpoint`, from the safetensors header only; None if unreadable."""
    from safetensors import safe_open

    try:
        with safe_open(str(checkpoint / "model.safetensors"), "pt") as f:
            return {name: tuple(f.get_slice(name).get_shape()) for name in f.keys()}
    except Exception:  # noqa: BLE001 - a damaged file is load_checkpoint's to report
        return None


def difference(recorded: CheckpointModel, current: CheckpointModel) -> str | None:
    """How `current` differs from the model the checkpoint recorded, or None when it is the same one."""
    if recorded.parameters != current.parameters:
        return f"another shape: {current.model_type} with parameters {current.parameters}, not {recorded.parameters}"
    if recorded.dtype == current.dtype:
        if recorded.base_fingerprint != current.base_fingerprint:
            return f"other base weights: {current.base_fingerprint}, not {recorded.base_fingerprint}"
        return None
    if recorded.name_or_path != current.name_or_path:  # in another dtype, only the name tells models apart
        return (f"another name, in {current.dtype} where the training was in {recorded.dtype}, so their weights "
                f"cannot be compared; if it is the same model, set model.dtype: {recorded.dtype} for one start")
    return None  # the same model in another dtype: the weights convert


def refusal_line(home_root: Path, checkpoint: str, recorded: CheckpointModel | None, current_name: str,
                 how: str, source: str = "the config") -> str:
    """The one line that refuses to resume checkpoint `checkpoint` of `recorded` (None: an earlier
    release's checkpoint, which names no model) with `current_name`, which differs as `how` says."""
    held = (f"{recorded.name_or_path} (base fingerprint {recorded.base_fingerprint})" if recorded is not None
            else "a model this release did not record (an older checkpoint)")
    return (f"node home {home_root} holds the training of {held} up to {checkpoint}, but model.name_or_path "
            f"is {current_name} (from {source}; {how}); to train {current_name} use another --home, or move "
            f"the old training aside with: {RESET_HINT.format(home=home_root)}")


def mismatch_line(home_root: Path, checkpoint: str, recorded: CheckpointModel | None,
                  saved_shapes: Mapping[str, tuple[int, ...]] | None, current: CheckpointModel) -> str | None:
    """The refusal line when checkpoint `checkpoint` does not belong to `current`, else None.

    `recorded`: its record; without one (an earlier release's checkpoint), `saved_shapes` are
    compared instead, and a checkpoint with neither is taken as it is."""
    if recorded is not None:
        how = difference(recorded, current)
    elif saved_shapes is not None and parameters_fingerprint(saved_shapes) != current.parameters:
        how = f"another shape: {current.model_type} with parameters {current.parameters}"
    else:
        how = None
    return None if how is None else refusal_line(home_root, checkpoint, recorded, current.name_or_path, how)
