"""policy/generation.py: where a completion ends (eos, stop strings)."""


def test_finish_completion_cuts_at_eos_and_stop_strings():
    from swarmnode.policy.generation import finish_completion
    from swarmnode.policy.tokenizer import build_byte_tokenizer

    tok = build_byte_tokenizer()
    eos = tok.eos_token_id
    ids = tok("12\n34", add_special_tokens=False)["input_ids"] + [eos, 50]
    c = finish_completion(tok, {eos}, ids, [-0.1] * len(ids), ())
    assert (c.text, c.finish_reason, len(c.token_ids)) == ("12\n34", "stop", 6)
    c = finish_completion(tok, {eos}, ids[:5], [-0.1] * 5, ("\n",))
    assert (c.text, c.finish_reason, c.token_ids) == ("12", "stop", ids[:2])
    c = finish_completion(tok, {eos}, ids[:3], [-0.1] * 3, ())
    assert c.finish_reason == "length" and c.logprobs == [-0.1] * 3
