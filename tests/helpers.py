"""Shared builders for tests."""
import importlib.util
import sys
from pathlib import Path
from swarmnode.protocol import PeerRecordFields
from swarmnode.protocol.generated import peer_record_pb2

ROOT = Path(__file__).resolve().parents[1]


def load_script(path: str):
    """The script at `path` (from the repository root, e.g. "scripts/bench/scale_sim.py") as a
    module named after its file, registered in sys.modules (its dataclasses look it up there)."""
    spec = importlib.util.spec_from_file_location(Path(path).stem, ROOT / path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


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


def build_digit_pair_tokenizer():
    """A byte-level tokenizer with one extra token per digit pair ("12" is one token): another
    vocabulary than the bundled policy's, for heterogeneous-swarm tests."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from swarmnode.policy.tokenizer import EOS_TOKEN, PAD_TOKEN, VERBATIM_CHAT_TEMPLATE, byte_symbols

    vocab = {symbol: i for i, symbol in enumerate(byte_symbols())}
    merges = []
    for a in "0123456789":
        for b in "0123456789":
            vocab[a + b] = len(vocab)
            merges.append((a, b))
    core = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    core.add_special_tokens([EOS_TOKEN, PAD_TOKEN])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, eos_token=EOS_TOKEN, bos_token=EOS_TOKEN,
                                        pad_token=PAD_TOKEN, model_max_length=256)
    tokenizer.chat_template = VERBATIM_CHAT_TEMPLATE
    return tokenizer


def save_random_gpt2_policy(path, hidden: int = 48, layers: int = 1):
    """A randomly initialised tiny GPT-2 with the digit-pair tokenizer: another architecture,
    size and vocabulary than the bundled Qwen2 (GPT-2's tokenizer keeps the digit merges)."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    tokenizer = build_digit_pair_tokenizer()
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(tokenizer), n_embd=hidden, n_layer=layers, n_head=2, n_positions=256,
                        tie_word_embeddings=False, eos_token_id=tokenizer.eos_token_id,
                        pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.eos_token_id)
    GPT2LMHeadModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def teacher_forced_logprobs(model, prompt: list[int], completion: list[int], temperature: float = 1.0):
    """log softmax(logits / T) of each completion token, [len(completion)], from one plain forward
    pass over prompt + completion (differentiable when grad is enabled)."""
    import torch

    device = next(model.parameters()).device
    logits = model(input_ids=torch.tensor([prompt + completion], device=device)).logits[0, len(prompt) - 1: -1].float() / temperature
    return torch.log_softmax(logits, -1).gather(-1, torch.tensor(completion, dtype=torch.long, device=device)[:, None]).squeeze(-1).cpu()

