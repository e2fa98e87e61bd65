"""Loading a policy: the bundled tiny one, a local folder, or any hub id, with AutoModelForCausalLM."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

BUNDLED_PREFIX = "bundled:"
BUNDLED_TINY = "bundled:tiny-policy"


class PolicyLoadError(Exception):
    """The model or tokenizer cannot be loaded; `str(e)` says what to check."""


def resolve_model_path(name_or_path: str) -> str:
    """"bundled:<name>" -> the folder shipped in swarmnode/assets; anything else unchanged."""
    if name_or_path.startswith(BUNDLED_PREFIX):
        name = name_or_path[len(BUNDLED_PREFIX):]
        path = Path(str(resources.files("swarmnode.assets").joinpath(name)))
        if not (path / "config.json").is_file():
            raise PolicyLoadError(f"bundled model {name!r} is not in {path.parent}; rebuild it with scripts/build_tiny_policy.py")
        return str(path)
    return name_or_path


def model_fingerprint(config: dict[str, Any], tokenizer) -> str:
    """Identifies a base model family: architecture config + tokenizer vocabulary (16 hex chars).

    Two nodes with the same fingerprint can exchange token ids, log-probs and weight deltas.
    Volatile fields (dtype, paths, transformers version) are left out.
    """
    volatile = {"_name_or_path", "torch_dtype", "dtype", "transformers_version", "_attn_implementation_autoset"}
    stable = {k: v for k, v in sorted(config.items()) if k not in volatile}
    vocab = sorted(tokenizer.get_vocab().items())
    blob = json.dumps({"config": stable, "vocab": vocab}, sort_keys=True, default=str).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()[:16]


def tokenizer_fingerprint(tokenizer) -> str:
    """The tokenizer's vocabulary alone (16 hex chars): same value, same token ids for the same text."""
    vocab = sorted(tokenizer.get_vocab().items())
    return hashlib.sha256(json.dumps(vocab).encode("utf-8")).hexdigest()[:16]


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
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise PolicyLoadError(f"cannot load model {name_or_path!r}: {first}") from None
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.to(device)
    return LoadedPolicy(name_or_path, model, tokenizer, model_fingerprint(model.config.to_dict(), tokenizer))
