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


def build_byte_tokenizer():
    """A PreTrainedTokenizerFast over the 256 byte-level symbols plus EOS and PAD."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {symbol: i for i, symbol in enumerate(alphabet)}
    for special in (EOS_TOKEN, PAD_TOKEN):
        vocab[special] = len(vocab)
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, eos_token=EOS_TOKEN, bos_token=EOS_TOKEN, pad_token=PAD_TOKEN
    )
    tokenizer.chat_template = VERBATIM_CHAT_TEMPLATE
    return tokenizer
