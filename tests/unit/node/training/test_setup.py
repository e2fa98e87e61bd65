"""node/training/setup.py: the config's device and objective settings reach the trainer and the generator."""
from swarmnode.config import NodeConfig, load_config


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
