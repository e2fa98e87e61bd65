"""policy/loading.py: what the model fingerprint covers, and a missing model's error."""
import pytest

from swarmnode.policy import PolicyLoadError, load_policy


def test_fingerprint_ignores_paths_but_not_architecture(tiny_dir, tmp_path):
    a = load_policy(str(tiny_dir))
    a.model.save_pretrained(tmp_path / "copy")
    a.tokenizer.save_pretrained(tmp_path / "copy")
    assert load_policy(str(tmp_path / "copy")).fingerprint == a.fingerprint
    a.model.config.num_hidden_layers = 3
    from swarmnode.policy import model_fingerprint

    assert model_fingerprint(a.model.config.to_dict(), a.tokenizer) != a.fingerprint


def test_missing_model_is_one_clear_error(tmp_path):
    with pytest.raises(PolicyLoadError, match="cannot load model"):
        load_policy(str(tmp_path / "nothing-here"))
