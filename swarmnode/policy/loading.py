"""Loading a policy: the bundled tiny one, a local folder, or any hub id, with AutoModelForCausalLM."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The fingerprint cache lives in the node home (stdlib only there); re-exported for the trainer.
from swarmnode.assets import BUNDLED_PREFIX, bundled_folder
from swarmnode.home import BASE_FINGERPRINT_FILE, cached_base_fingerprint  # noqa: F401
from swarmnode.utils.errors import first_line

BUNDLED_TINY = "bundled:tiny-policy"


class PolicyLoadError(Exception):
    """The model or tokenizer cannot be loaded; `str(e)` says what to check."""


def resolve_model_path(name_or_path: str) -> str:
    """"bundled:<name>" -> the folder shipped in swarmnode/assets; anything else unchanged."""
    if name_or_path.startswith(BUNDLED_PREFIX):
        name = name_or_path[len(BUNDLED_PREFIX):]
        path = bundled_folder(name)
        if not (path / "config.json").is_file():
            raise PolicyLoadError(f"bundled model {name!r} is not in {path.parent}; rebuild it with scripts/dev/build_tiny_policy.py")
        return str(path)
    return name_or_path


# Model config fields that say nothing about the architecture: left out of its fingerprints.
VOLATILE_CONFIG_FIELDS = frozenset({"_name_or_path", "torch_dtype", "dtype", "transformers_version",
                                    "_attn_implementation_autoset"})


def model_fingerprint(config: dict[str, Any], tokenizer) -> str:
    """Identifies a base model family: architecture config + tokenizer vocabulary (16 hex chars).

    Two nodes with the same fingerprint can exchange token ids, log-probs and weight deltas.
    Volatile fields (dtype, paths, transformers version) are left out.
    """
    stable = {k: v for k, v in sorted(config.items()) if k not in VOLATILE_CONFIG_FIELDS}
    vocab = sorted(tokenizer.get_vocab().items())
    blob = json.dumps({"config": stable, "vocab": vocab}, sort_keys=True, default=str).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()[:16]


def architecture_fingerprint(config: dict[str, Any]) -> str:
    """The model config alone (`model.config.to_dict()`, or AutoConfig's for a folder not loaded;
    16 hex chars), volatile fields left out: which checkpoint a home's training belongs to."""
    stable = {k: v for k, v in sorted(config.items()) if k not in VOLATILE_CONFIG_FIELDS}
    return hashlib.sha256(json.dumps(stable, sort_keys=True, default=str).encode("utf-8")).hexdigest()[:16]


def tokenizer_fingerprint(tokenizer) -> str:
    """The tokenizer's vocabulary alone (16 hex chars): same value, same token ids for the same text."""
    vocab = sorted(tokenizer.get_vocab().items())
    return hashlib.sha256(json.dumps(vocab).encode("utf-8")).hexdigest()[:16]


def base_fingerprint(model) -> str:
    """Identifies a model's weights, not its architecture (16 hex chars).

    sha256 over the state dict in sorted name order: each tensor's name, dtype, shape and raw
    bytes (copied to the CPU, contiguous). Two models of one architecture but different weights
    (one element differs) get different fingerprints; the same weights loaded in another process
    or on another device get the same one. The dtype counts: the same checkpoint loaded as
    float32 and as bfloat16 differs. Gradient summaries are only merged between equal values.
    Hashing reads every parameter (about 1 s per GB): see home.cached_base_fingerprint.
    """
    import torch

    digest = hashlib.sha256(b"swarmnode.base_fingerprint/1\0")
    with torch.no_grad():
        for name, tensor in sorted(model.state_dict().items()):
            t = tensor.detach().to("cpu").contiguous().reshape(-1)
            header = f"{name}\0{str(tensor.dtype).removeprefix('torch.')}\0{tuple(tensor.shape)}\0{t.numel() * t.element_size()}\0"
            digest.update(header.encode("utf-8"))
            digest.update(t.view(torch.uint8).numpy().data)
    return digest.hexdigest()[:16]


# Weight files whose size and mtime stand for a local folder's initial weights.
WEIGHT_FILE_PATTERNS = ("*.safetensors", "*.bin")


def base_weights_key(name_or_path: str, resolved_path: str, dtype: str = "") -> str:
    """A key for cached_base_fingerprint: what identifies the initial weights without reading them.

    name_or_path as configured, the dtype the weights are loaded in (it changes the
    fingerprint; pass the config's model.dtype) and, when resolved_path is a local folder, its
    resolved path and the name, size and mtime (ns) of each *.safetensors / *.bin file in it: a
    rewritten weight file gives a new key, so it is hashed again. A hub id is keyed by name.
    """
    parts: dict[str, Any] = {"name_or_path": name_or_path, "dtype": dtype}
    folder = Path(resolved_path)
    if folder.is_dir():
        files = sorted({f for pattern in WEIGHT_FILE_PATTERNS for f in folder.glob(pattern) if f.is_file()})
        parts["path"] = str(folder.resolve())
        parts["files"] = [[f.name, f.stat().st_size, f.stat().st_mtime_ns] for f in files]
    return json.dumps(parts, sort_keys=True, separators=(",", ":"))


@dataclass
class LoadedPolicy:
    name: str
    model: Any
    tokenizer: Any
    fingerprint: str


def load_policy(name_or_path: str, *, device: str = "cpu", dtype: str = "float32") -> LoadedPolicy:
    """Load model + tokenizer from a hub id, a local folder, or "bundled:<name>"."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # a daemon's log is no place for progress bars
    path = resolve_model_path(name_or_path)
    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype))
    except (OSError, ValueError) as e:
        raise PolicyLoadError(f"cannot load model {name_or_path!r}: {first_line(e)}") from None
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.to(device)
    return LoadedPolicy(name_or_path, model, tokenizer, model_fingerprint(model.config.to_dict(), tokenizer))
