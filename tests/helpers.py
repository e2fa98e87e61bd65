"""Shared builders for tests."""
from swarmnode.protocol import PeerRecordFields
from swarmnode.protocol.generated import peer_record_pb2


def record_fields(swarm: str = "s", gflops: float = 0.0) -> PeerRecordFields:
    """PeerRecordFields of a running CPU node in `swarm`."""
    return PeerRecordFields(
        software_version="0.1.0", swarm=swarm, multiaddrs=("/ip4/127.0.0.1/tcp/1",), model_fingerprint="",
        device=peer_record_pb2.DeviceInfo(kind="cpu"), capability=peer_record_pb2.Capability(matmul_gflops=gflops),
        state=peer_record_pb2.NODE_STATE_RUNNING, client_mode=False,
    )


def save_random_tiny_policy(path, hidden: int = 32, layers: int = 2):
    """A randomly initialised tiny Qwen2 with the byte tokenizer, saved like a real checkpoint."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from swarmnode.policy.tokenizer import build_byte_tokenizer

    tokenizer = build_byte_tokenizer()
    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=2,
                         num_key_value_heads=1, intermediate_size=2 * hidden, max_position_embeddings=64,
                         tie_word_embeddings=False, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.eos_token_id)
    Qwen2ForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
