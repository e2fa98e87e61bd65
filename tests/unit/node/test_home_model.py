"""node/home_model.py: before start, a home whose newest checkpoint belongs to another model is refused
in one line when that can be told without the weights (its fingerprint cached, or another model type)."""
import json
from dataclasses import replace

from swarmnode.config import load_config_with_sources
from swarmnode.home import cached_base_fingerprint
from swarmnode.node.home_model import HomeModelFacts, configured_model_type, home_model_problem, probe_home_model
from swarmnode.policy.loading import base_weights_key, resolve_model_path
from swarmnode.store.checkpoint_model import CheckpointModel

RECORDED = CheckpointModel(name_or_path="bundled:tiny-policy", base_fingerprint="a" * 16, base_weights_key="old key",
                           dtype="float32", model_type="qwen2", architecture="b" * 16, parameters="c" * 16)
FACTS = HomeModelFacts("v00000460", RECORDED, key="new key", cached_base=None, model_type=None)


def config_naming(tmp_path, name):
    path = tmp_path / "config.yaml"
    path.write_text(f"model:\n  name_or_path: {name}\n")
    return load_config_with_sources(path, {}, environ={})


def test_only_a_cached_fingerprint_or_another_model_type_decides_before_start(tmp_path):
    config, sources = config_naming(tmp_path, "bundled:tiny-sum3")
    assert home_model_problem(config, replace(FACTS, key="old key", cached_base="e" * 16), sources, tmp_path) is None
    assert home_model_problem(config, replace(FACTS, cached_base="a" * 16), sources, tmp_path) is None
    assert home_model_problem(config, replace(FACTS, model_type="qwen2"), sources, tmp_path) is None
    assert home_model_problem(config, FACTS, sources, tmp_path) is None  # the trainer compares the weights
    line = home_model_problem(config, replace(FACTS, cached_base="e" * 16), sources, tmp_path)
    assert "other base weights" in line and f"model.name_or_path in {tmp_path / 'config.yaml'}" in line
    assert f"swarmnode reset-training --home {tmp_path}" in line and "\n" not in line
    line = home_model_problem(config, replace(FACTS, model_type="llama"), sources, tmp_path)
    assert "another model type: llama, not qwen2" in line and "bundled:tiny-policy (base fingerprint " + "a" * 16 in line


def test_probe_reads_the_record_the_cache_and_only_when_needed_the_model_config(tmp_path):
    config, _ = config_naming(tmp_path, "bundled:tiny-sum3")
    assert probe_home_model(config, tmp_path) is None  # no checkpoint
    checkpoint = tmp_path / "checkpoints" / "v00000460"
    checkpoint.mkdir(parents=True)
    (checkpoint / "state.json").write_text(json.dumps({"model": RECORDED.to_json()}))
    (tmp_path / "checkpoints" / "latest").write_text("v00000460")
    facts = probe_home_model(config, tmp_path)
    key = base_weights_key("bundled:tiny-sum3", resolve_model_path("bundled:tiny-sum3"), dtype="float32")
    assert facts == HomeModelFacts("v00000460", RECORDED, key, None, configured_model_type("bundled:tiny-sum3"))
    assert facts.model_type is not None
    cached_base_fingerprint(tmp_path, key, lambda: "e" * 16)
    assert probe_home_model(config, tmp_path) == replace(facts, cached_base="e" * 16, model_type=None)
