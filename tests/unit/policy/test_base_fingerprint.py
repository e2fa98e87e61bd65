"""The base-weights fingerprint: which peers' gradient summaries this node may merge."""
import json
import os
import subprocess
import sys

import pytest
import torch

from swarmnode.home import BASE_FINGERPRINT_FILE, NodeHome, cached_base_fingerprint
from swarmnode.policy import loading
from swarmnode.policy.loading import (
    BUNDLED_TINY,
    base_fingerprint,
    base_weights_key,
    load_policy,
    model_fingerprint,
    resolve_model_path,
)
from tests.helpers import save_random_tiny_policy

FP = "0123456789abcdef"


@pytest.fixture(scope="module")
def tiny():
    return load_policy(BUNDLED_TINY)


def test_same_weights_match_and_one_changed_element_differs(tiny):
    before = base_fingerprint(tiny.model)
    assert len(before) == 16 and int(before, 16) >= 0
    assert base_fingerprint(load_policy(BUNDLED_TINY).model) == before  # loaded again
    param = next(iter(tiny.model.parameters()))
    with torch.no_grad():
        old = param.view(-1)[7].item()
        param.view(-1)[7] += 1e-3
        try:
            assert base_fingerprint(tiny.model) != before
        finally:
            param.view(-1)[7] = old
    assert base_fingerprint(tiny.model) == before


def test_same_architecture_other_weights_and_dtypes_differ(tiny, tmp_path):
    from transformers import AutoModelForCausalLM

    random_init = load_policy(str(save_random_tiny_policy(tmp_path / "a")))
    assert base_fingerprint(random_init.model) != base_fingerprint(tiny.model)
    torch.manual_seed(1)
    reinit = AutoModelForCausalLM.from_config(random_init.model.config)  # one architecture, other weights
    assert model_fingerprint(reinit.config.to_dict(), random_init.tokenizer) == random_init.fingerprint
    assert base_fingerprint(reinit) != base_fingerprint(random_init.model)
    assert base_fingerprint(load_policy(BUNDLED_TINY, dtype="bfloat16").model) != base_fingerprint(tiny.model)
    # The same seeded weights saved in another folder: the path does not count.
    again = load_policy(str(save_random_tiny_policy(tmp_path / "b")))
    assert base_fingerprint(again.model) == base_fingerprint(random_init.model)


def test_another_process_computes_the_same_fingerprint(tiny):
    code = ("from swarmnode.policy.loading import BUNDLED_TINY, base_fingerprint, load_policy; "
            "print(base_fingerprint(load_policy(BUNDLED_TINY).model))")
    env = {**os.environ, "PYTHONHASHSEED": "123"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == base_fingerprint(tiny.model)


def test_cache_hit_does_not_compute(tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return FP

    assert cached_base_fingerprint(tmp_path, "k", compute) == FP
    assert cached_base_fingerprint(tmp_path, "k", compute) == FP
    assert calls == [1]
    assert json.loads((tmp_path / BASE_FINGERPRINT_FILE).read_text()) == {"k": FP}
    assert NodeHome(tmp_path).base_fingerprint_file == tmp_path / BASE_FINGERPRINT_FILE
    assert loading.cached_base_fingerprint is cached_base_fingerprint  # the trainer imports it from policy.loading
    assert cached_base_fingerprint(tmp_path, "other", lambda: "fedcba9876543210") == "fedcba9876543210"
    assert cached_base_fingerprint(tmp_path, "k", lambda: pytest.fail("recomputed")) == FP
    assert [p.name for p in tmp_path.iterdir()] == [BASE_FINGERPRINT_FILE]  # no temporary file left


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"k": 5}', '{"k": "short"}', ""])
def test_corrupt_cache_is_recomputed(tmp_path, content):
    (tmp_path / BASE_FINGERPRINT_FILE).write_text(content)
    assert cached_base_fingerprint(tmp_path, "k", lambda: FP) == FP
    assert json.loads((tmp_path / BASE_FINGERPRINT_FILE).read_text())["k"] == FP


def test_unwritable_home_still_returns_the_fingerprint(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert cached_base_fingerprint(blocker / "home", "k", lambda: FP) == FP


def test_weights_key_changes_when_a_weight_file_changes(tmp_path):
    folder = save_random_tiny_policy(tmp_path / "m")
    key = base_weights_key(str(folder), str(folder), "float32")
    assert key == base_weights_key(str(folder), str(folder), "float32")
    assert key != base_weights_key(str(folder), str(folder), "bfloat16")
    weights = folder / "model.safetensors"
    stat = weights.stat()
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert base_weights_key(str(folder), str(folder), "float32") != key
    (folder / "extra.bin").write_bytes(b"x")
    assert base_weights_key(str(folder), str(folder), "float32") != key
    # A hub id (no local folder) is keyed by its name; the bundled policy by its files.
    assert "Qwen/Qwen2.5-0.5B" in base_weights_key("Qwen/Qwen2.5-0.5B", "Qwen/Qwen2.5-0.5B")
    assert "model.safetensors" in base_weights_key(BUNDLED_TINY, resolve_model_path(BUNDLED_TINY))


def test_cached_fingerprint_of_the_bundled_policy(tiny, tmp_path):
    key = base_weights_key(BUNDLED_TINY, resolve_model_path(BUNDLED_TINY), "float32")
    first = cached_base_fingerprint(tmp_path, key, lambda: base_fingerprint(tiny.model))
    assert first == base_fingerprint(tiny.model)
    assert cached_base_fingerprint(tmp_path, key, lambda: pytest.fail("recomputed")) == first
