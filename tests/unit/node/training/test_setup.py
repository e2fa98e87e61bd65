"""node/training/setup.py: the config's device and objective settings reach the trainer and the generator;
a checkpoint names its model, and one of another model is refused before its weights are loaded."""
import pytest
from safetensors.torch import save_file

from swarmnode.config import NodeConfig, load_config
from swarmnode.node.home_model import configured_model_type
from swarmnode.store.checkpoint_model import CheckpointOfAnotherModel, read_checkpoint_model
from tests.helpers import save_random_tiny_policy


def test_the_node_hands_device_and_objective_settings_to_its_trainer_and_generator(tmp_path):
    from swarmnode.node.training.service import generator_options, trainer_config

    path = tmp_path / "c.yaml"
    path.write_text("model:\n  decode: generate\n  cudnn_attention: true\n  fp32_logits: true\n"
                    "training:\n  micro_batch_tokens: 4096\n  forward_chunking: plain\n"
                    "  foreign_text_objective: shaped\n  foreign_shaping_gamma: 0.2\n")
    config = load_config(path, environ={})
    t = trainer_config(config)
    assert (t.micro_batch_tokens, t.forward_chunking, t.fp32_logits, t.cudnn_attention) == (4096, "plain", True, True)
    assert (t.foreign_text_objective, t.foreign_shaping_gamma) == ("shaped", 0.2)
    assert generator_options(config) == {"decode": "generate", "fp32_logits": True, "cudnn_attention": True}
    auto = trainer_config(NodeConfig())
    assert auto.micro_batch_tokens is None and auto.forward_chunking == "auto"  # sized per device


# -- which model a checkpoint belongs to ---------------------------------------------------------


@pytest.fixture(scope="module")
def policies(tmp_path_factory):
    """Two random tiny Qwen2 folders: "narrow" and "wide" (another shape)."""
    from swarmnode.policy import load_policy

    return {name: load_policy(str(save_random_tiny_policy(tmp_path_factory.mktemp(name), hidden=hidden)))
            for name, hidden in (("narrow", 32), ("wide", 48))}


def node_of(policy, home):
    """(config, checkpoints root, CheckpointModel) of a node training `policy` in `home`."""
    from swarmnode.node.training.setup import checkpoint_model

    config = NodeConfig.model_validate({"model": {"name_or_path": policy.name}})
    return config, home / "checkpoints", checkpoint_model(config, policy, "f" * 16, f"key of {policy.name}")


def checkpoint_of(policy, home, record=True):
    """A checkpoint of `policy` in `home` (with its model record, or as an earlier release wrote it)."""
    from swarmnode.node.training.setup import resume_trainer
    from swarmnode.store.checkpoints import BackgroundCheckpointer, TrainingState

    config, root, model = node_of(policy, home)
    trainer, _, _ = resume_trainer(config, policy, root, model)
    writer = BackgroundCheckpointer(root)
    writer.model_record = model.to_json() if record else None
    writer.save(trainer.model, trainer.optimizer, TrainingState(7, 7, 0, {}))
    writer.wait()
    return writer.last_path


def test_a_checkpoint_names_its_model_and_the_same_model_resumes_from_it(policies, tmp_path):
    from swarmnode.node.training.setup import resume_trainer

    path = checkpoint_of(policies["narrow"], tmp_path)
    config, root, model = node_of(policies["narrow"], tmp_path)
    recorded = read_checkpoint_model(path)
    assert recorded == model and recorded.name_or_path == policies["narrow"].name and recorded.model_type == "qwen2"
    # What the check before start reads from the model's config alone is what the trainer recorded.
    assert recorded.model_type == configured_model_type(policies["narrow"].name)
    _, state, resumed = resume_trainer(config, policies["narrow"], root, model)
    assert state.version == 7 and resumed == path


@pytest.mark.parametrize("record", [True, False], ids=["recorded", "earlier-release"])
def test_a_model_of_another_shape_is_refused_in_one_line_before_any_weight_is_loaded(policies, tmp_path, monkeypatch,
                                                                                    record):
    from swarmnode.node.training import setup

    checkpoint_of(policies["narrow"], tmp_path, record=record)
    monkeypatch.setattr(setup, "load_checkpoint", lambda *a: pytest.fail("loaded the checkpoint"))
    config, root, model = node_of(policies["wide"], tmp_path)
    with pytest.raises(CheckpointOfAnotherModel) as refused:
        setup.resume_trainer(config, policies["wide"], root, model)
    line = str(refused.value)
    assert "\n" not in line and "another shape" in line and f"swarmnode reset-training --home {tmp_path}" in line
    assert (policies["narrow"].name in line) == record and f"model.name_or_path is {policies['wide'].name}" in line


def test_a_checkpoint_that_fails_to_load_anyway_fails_in_one_line(policies, tmp_path):
    from swarmnode.node.training.setup import CheckpointUnloadable, resume_trainer

    path = checkpoint_of(policies["narrow"], tmp_path)
    # Wrong weights under the right record: the record passes, load_state_dict fails.
    save_file({k: v.contiguous() for k, v in policies["wide"].model.state_dict().items()}, str(path / "model.safetensors"))
    config, root, narrow = node_of(policies["narrow"], tmp_path)
    with pytest.raises(CheckpointUnloadable) as failed:
        resume_trainer(config, policies["narrow"], root, narrow)
    line = str(failed.value)
    assert "\n" not in line and "size mismatch" in line and "reset-training" in line




def test_a_model_whose_summaries_cannot_fit_one_message_is_refused_at_start_with_the_density_that_fits():
    from swarmnode.node.training.service import failure_reason
    from swarmnode.node.training.setup import SummariesTooLarge, check_summary_size
    from swarmnode.summaries import CompressionConfig

    check_summary_size({"w": (1_000_000,)}, CompressionConfig())  # the bundled policy's size: fits
    with pytest.raises(SummariesTooLarge) as refused:  # a 494M-parameter model's 2% summaries: ~12 MB
        check_summary_size({"w": (494_000_000,)}, CompressionConfig())
    line = failure_reason(refused.value)
    assert line.startswith("gradient summaries of this model (494,000,000 parameters) at summaries.density 0.02 "
                           "can reach 11.5 MiB, over the 3.94 MiB a summary may be: set summaries.density to "
                           "0.00537 or lower, or summaries.enabled: false"), line
    with pytest.raises(SummariesTooLarge, match=r"raise summaries.chunk_size \(now 4096\)"):
        check_summary_size({"w": (7_000_000_000,)}, CompressionConfig())
