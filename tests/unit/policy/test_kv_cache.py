"""policy/kv_cache.py: the KV cache goes by the name the model's forward takes, and comes back
from the output under either name."""
import warnings

import pytest
import torch
from transformers import DynamicCache

from swarmnode.policy import BUNDLED_TINY, load_policy
from swarmnode.policy.kv_cache import cache_argument, returned_cache, with_cache


class NewNames:  # transformers >= 5.24
    def forward(self, input_ids, cache=None, use_cache=None):
        return input_ids


class OldNames:  # transformers <= 5.23, and hub models with their own modelling code
    def forward(self, input_ids, past_key_values=None, use_cache=None):
        return input_ids


def test_the_cache_goes_by_the_forward_signatures_name():
    assert cache_argument(NewNames()) == "cache"
    assert cache_argument(OldNames()) == "past_key_values"
    marker = object()
    assert with_cache(OldNames(), marker) == {"past_key_values": marker, "use_cache": True}
    assert with_cache(NewNames(), marker) == {"cache": marker, "use_cache": True}


def test_the_returned_cache_is_read_under_either_name():
    marker = object()
    assert returned_cache({"logits": None, "cache": marker}) is marker
    assert returned_cache({"logits": None, "past_key_values": marker}) is marker
    with pytest.raises(ValueError, match="returned no KV cache"):
        returned_cache({"logits": None})


def test_a_cached_forward_of_the_bundled_policy_warns_of_no_renamed_argument():
    """The installed transformers' own name: no deprecation warning on the decode's path (a
    daemon's console would print it), and the cache that comes back is the one handed in, filled."""
    model = load_policy(BUNDLED_TINY).model
    cache = DynamicCache()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = model(input_ids=torch.tensor([[5, 6, 7]]), **with_cache(model, cache))
        returned = returned_cache(out)
    assert not [w for w in caught if "past_key_values" in str(w.message)], [str(w.message) for w in caught]
    assert returned is cache and returned.get_seq_length() == 3
