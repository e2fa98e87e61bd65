import pytest


@pytest.fixture
def tiny_model():
    """A randomly initialised one-layer Qwen2 (vocabulary 16) for trainer tests."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=16, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                         num_key_value_heads=1, intermediate_size=32, max_position_embeddings=32, tie_word_embeddings=False)
    return Qwen2ForCausalLM(config)
