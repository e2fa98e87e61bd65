"""Before start: does the home's newest checkpoint belong to the model the config names?

Told from what can be read without the weights: the checkpoint's record (store/checkpoint_model.py),
the configured model's base-weights key, the fingerprint the home cached for that key, and the
model type in the model's config. When those cannot tell (another name, never hashed in this
home, the same model type), the trainer compares the base fingerprints once it has hashed the weights, still
before it loads the checkpoint (node/training/setup.py resume_trainer).
`probe_home_model` reads; `home_model_problem` judges, without I/O.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from swarmnode.config import NodeConfig, ValueSources
from swarmnode.home import read_cached_base_fingerprint
from swarmnode.store.checkpoint_model import CheckpointModel, read_checkpoint_model, refusal_line

LATEST = "latest"  # store.checkpoints.LATEST, the pointer to the newest checkpoint


@dataclass(frozen=True)
class HomeModelFacts:
    """What probe_home_model found about a home with a recorded checkpoint."""

    checkpoint: str  # the newest checkpoint's name
    recorded: CheckpointModel
    key: str  # the configured model's base-weights key
    cached_base: str | None  # the fingerprint the home cached under `key`
    model_type: str | None  # the configured model's config.model_type, read only when needed


def configured_model_type(name_or_path: str) -> str | None:
    """The configured model's model type from its config alone (no weights, nothing downloaded);
    None when its config cannot be read here. Only the type: a whole config's hash changes when
    a transformers release adds a default field, and would refuse the same model."""
    from swarmnode.policy.loading import resolve_model_path

    try:
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(resolve_model_path(name_or_path), local_files_only=True)
    except Exception:  # noqa: BLE001 - unknown here: the trainer compares the weights themselves
        return None
    return str(config.model_type)


def probe_home_model(config: NodeConfig, home_root: Path) -> HomeModelFacts | None:
    """The facts, or None for a node without a model or a home without a recorded checkpoint."""
    name = config.model.name_or_path
    if not name or not (home_root / "checkpoints" / LATEST).is_file():
        return None  # (checked first: store.checkpoints imports torch)
    from swarmnode.policy.loading import base_weights_key, resolve_model_path
    from swarmnode.store.checkpoints import latest_checkpoint

    newest = latest_checkpoint(home_root / "checkpoints")
    recorded = read_checkpoint_model(newest) if newest is not None else None
    if newest is None or recorded is None:
        return None
    try:
        key = base_weights_key(name, resolve_model_path(name), dtype=config.model.dtype)
    except Exception:  # noqa: BLE001 - a model that cannot be found is the model check's to report
        return None
    cached = read_cached_base_fingerprint(home_root, key)
    undecided = key != recorded.base_weights_key and cached is None
    return HomeModelFacts(newest.name, recorded, key, cached, configured_model_type(name) if undecided else None)


def home_model_problem(config: NodeConfig, facts: HomeModelFacts, sources: ValueSources, home_root: Path) -> str | None:
    """The one line refusing a config whose model is not the one the home's checkpoint belongs to."""
    recorded = facts.recorded
    if facts.key == recorded.base_weights_key:
        return None  # the same weight files, in the same dtype
    if facts.cached_base is not None and config.model.dtype == recorded.dtype:
        if facts.cached_base == recorded.base_fingerprint:
            return None
        how = f"other base weights: {facts.cached_base}, not {recorded.base_fingerprint}"
    elif facts.model_type is not None and facts.model_type != recorded.model_type:
        how = f"another model type: {facts.model_type}, not {recorded.model_type}"
    else:
        return None
    return refusal_line(home_root, facts.checkpoint, recorded, config.model.name_or_path, how,
                        sources.of("model.name_or_path"))
