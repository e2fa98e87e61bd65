"""policy/tokenizer.py: the bundled byte-level tokenizer through AutoTokenizer."""
from transformers import AutoTokenizer

from swarmnode.policy.prompts import format_prompt


def test_byte_tokenizer_round_trips_through_autotokenizer(tiny_dir):
    tokenizer = AutoTokenizer.from_pretrained(tiny_dir)
    text = "12 + 7\n= 19\tdone é"
    assert tokenizer.decode(tokenizer(text)["input_ids"]) == text
    assert format_prompt(tokenizer, "3+4=") == "3+4="
