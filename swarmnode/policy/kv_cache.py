"""Passing a KV cache to a transformers model whichever name its forward takes it by.

transformers 5.24 renamed `past_key_values` to `cache` (the forward argument and the output's
field) and warns on every use of the old name; 5.23 and earlier know only `past_key_values`
(the GPU machine's image has 5.17). A model's own forward signature says which it takes, so a
hub model with its own modelling code is asked, not assumed."""
from __future__ import annotations

import functools
import inspect
from typing import Any


def cache_argument(model: Any) -> str:
    """The name `model`'s forward takes the cache by: "cache" where it has that parameter,
    else "past_key_values" (also for a wrapper whose forward takes only **kwargs)."""
    return _cache_argument_of(type(model))


@functools.lru_cache(maxsize=64)
def _cache_argument_of(model_class: type) -> str:  # read once per class: the decode asks every token
    return "cache" if "cache" in inspect.signature(model_class.forward).parameters else "past_key_values"


def with_cache(model: Any, cache: Any) -> dict[str, Any]:
    """Keyword arguments that hand `cache` to `model`'s forward and ask for the cache back."""
    return {cache_argument(model): cache, "use_cache": True}


def returned_cache(output: Any) -> Any:
    """The cache a forward returned, read by the name its output class keeps it under."""
    for name in ("cache", "past_key_values"):
        if name in output.keys() and output[name] is not None:
            return output[name]
    raise ValueError("the model's forward returned no KV cache (was use_cache=True passed?)")
