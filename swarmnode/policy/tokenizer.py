"""The bundled policy's tokenizer: one token per byte, in GPT-2 byte-level form.

Why byte-level: transformers 5's AutoTokenizer rebuilds some architectures' tokenizers (Qwen2 as
Qwen2Tokenizer) whatever class was saved; a plain character vocab then silently loses spaces
and newlines. Byte-level symbols ("Ġ" for space) survive that rebuild, and any text encodes.
"""
from __future__ import annotations

EOS_TOKEN = "<|endoftext|>"
PAD_TOKEN = "<|pad|>"
# The prompt is the task's question, verbatim: a tiny model has no use for role markers.
VERBATIM_CHAT_TEMPLATE = "{% for message in messages %}{{ message['content'] }}{% endfor %}"


def byte_symbols() -> list[str]:
    """GPT-2's byte-to-unicode symbols in byte order, so that token id == byte value."""
    from tokenizers import pre_tokenizers

    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    extra = iter(range(256, 512))
    symbols = [chr(b) if b in printable else chr(next(extra)) for b in range(256)]
    assert set(symbols) == set(pre_tokenizers.ByteLevel.alphabet())
    return symbols


def build_byte_tokenizer(model_max_length: int = 256):
    """A PreTrainedTokenizerFast over the 256 byte-level symbols plus EOS and PAD (ids 256, 257)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {symbol: i for i, symbol in enumerate(byte_symbols())}
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    core.add_special_tokens([EOS_TOKEN, PAD_TOKEN])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, eos_token=EOS_TOKEN, bos_token=EOS_TOKEN, pad_token=PAD_TOKEN,
        model_max_length=model_max_length,
    )
    tokenizer.chat_template = VERBATIM_CHAT_TEMPLATE
    return tokenizer
