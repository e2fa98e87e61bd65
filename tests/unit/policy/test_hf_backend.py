import math

import pytest
import torch
from transformers import AutoTokenizer

from swarmnode.policy import PolicyLoadError, SamplingParams, load_policy
from swarmnode.policy.hf_backend import AUTO_TRIALS, HFGenerator, bucket_size, decode_candidates, fastest
from swarmnode.policy.precision import use_fp32_logits
from swarmnode.policy.prompts import format_prompt, left_pad
from swarmnode.policy.sampling import sample_next, top_p_filter
from tests.helpers import save_random_tiny_policy, teacher_forced_logprobs


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return save_random_tiny_policy(tmp_path_factory.mktemp("tiny"))


def test_byte_tokenizer_round_trips_through_autotokenizer(tiny_dir):
    tokenizer = AutoTokenizer.from_pretrained(tiny_dir)
    text = "12 + 7\n= 19\tdone é"
    assert tokenizer.decode(tokenizer(text)["input_ids"]) == text
    assert format_prompt(tokenizer, "3+4=") == "3+4="


def test_top_p_by_hand():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    kept = torch.isfinite(top_p_filter(logits, 0.7))
    assert kept.tolist() == [[True, True, False, False]]  # 0.5 < 0.7 <= 0.5 + 0.3
    assert torch.isfinite(top_p_filter(logits, 0.1)).tolist() == [[True, False, False, False]]
    assert torch.equal(top_p_filter(logits, 1.0), logits)


def test_sample_next_logprob_is_tempered_log_softmax():
    logits = torch.tensor([[2.0, 0.0, -1.0]])
    tokens, logprobs = sample_next(logits, temperature=0.5, top_p=1.0, generator=torch.Generator().manual_seed(0))
    expected = torch.log_softmax(logits / 0.5, dim=-1)[0, tokens[0]]
    assert math.isclose(logprobs.item(), expected.item(), rel_tol=1e-6)
    greedy, _ = sample_next(logits, temperature=0.0, top_p=1.0)
    assert greedy.tolist() == [0]


def test_left_pad():
    ids, mask = left_pad([[1, 2, 3], [4]], pad_id=0)
    assert ids.tolist() == [[1, 2, 3], [0, 0, 4]] and mask.tolist() == [[1, 1, 1], [0, 0, 1]]


def test_loop_matches_generate_on_greedy_and_logprobs_match_teacher_forcing(tiny_dir):
    policy = load_policy(str(tiny_dir))
    prompts = ["1+2=", "34+5+67=", "9="]
    greedy = SamplingParams(temperature=0.0, max_new_tokens=8)
    loop = HFGenerator(policy.model, policy.tokenizer, decode="loop").generate(prompts, 1, greedy)
    gen = HFGenerator(policy.model, policy.tokenizer, decode="generate").generate(prompts, 1, greedy)
    bucketed = HFGenerator(policy.model, policy.tokenizer, decode="bucketed").generate(prompts, 1, greedy)
    assert [g.completions[0].token_ids for g in loop] == [g.completions[0].token_ids for g in gen]
    assert [g.completions[0].token_ids for g in loop] == [g.completions[0].token_ids for g in bucketed]

    sampled = HFGenerator(policy.model, policy.tokenizer).generate(prompts, 4, SamplingParams(temperature=0.8, max_new_tokens=8, seed=1))
    for group in sampled:
        assert len(group.completions) == 4
        for c in group.completions:
            assert len(c.token_ids) == len(c.logprobs) > 0 and c.finish_reason in ("stop", "length")
            # Behaviour log-probs equal a teacher-forced forward pass over prompt + completion.
            recomputed = teacher_forced_logprobs(policy.model, group.prompt_token_ids, c.token_ids, 0.8)
            assert torch.allclose(recomputed, torch.tensor(c.logprobs), atol=1e-4)


def test_seeded_sampling_is_reproducible(tiny_dir):
    policy = load_policy(str(tiny_dir))
    generator = HFGenerator(policy.model, policy.tokenizer)
    params = SamplingParams(temperature=1.0, max_new_tokens=6, seed=3)
    first = generator.generate(["5+5="], 3, params)
    again = generator.generate(["5+5="], 3, params)
    assert [c.token_ids for c in first[0].completions] == [c.token_ids for c in again[0].completions]


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


def test_bucket_size_by_hand():
    assert [bucket_size(n, 48) for n in (1, 2, 3, 5, 16, 17, 33, 48)] == [1, 2, 4, 8, 16, 32, 48, 48]
    assert decode_candidates("auto", torch.device("cpu")) == ("loop",)
    assert decode_candidates("auto", torch.device("cuda", 0)) == ("loop", "generate")
    assert decode_candidates("bucketed", torch.device("cuda")) == ("bucketed",)
    with pytest.raises(ValueError, match="model.decode"):
        decode_candidates("fast", torch.device("cpu"))
    assert fastest({"loop": [5.0, 9.0], "generate": [8.0, 8.5]}) == "loop"  # the best trial counts
    assert fastest({"loop": [], "generate": [1.0]}) == "generate"


def test_auto_decode_tries_each_candidate_then_keeps_the_fastest(tiny_dir):
    policy = load_policy(str(tiny_dir))
    generator = HFGenerator(policy.model, policy.tokenizer)
    generator.decode_rates = {"loop": [], "generate": []}  # a GPU's candidates, on this CPU
    params = SamplingParams(temperature=1.0, max_new_tokens=4, seed=0)
    ran = []
    for _ in range(2 * AUTO_TRIALS + 2):
        ran.append(generator.decode)
        assert len(generator.generate(["1+2=", "3+4="], 2, params)) == 2
    assert ran[: 2 * AUTO_TRIALS] == ["loop", "generate"] * AUTO_TRIALS  # taking turns
    assert [len(r) for r in generator.decode_rates.values()] == [AUTO_TRIALS, AUTO_TRIALS] and not generator.on_trial
    assert ran[2 * AUTO_TRIALS:] == [fastest(generator.decode_rates)] * 2


@pytest.mark.parametrize("decode", ["loop", "bucketed"])
def test_rows_that_end_early_leave_the_batch_and_the_rest_stay_exact(tiny_dir, decode):
    """Shared prefill + dropping finished rows: every sample still gets teacher-forced log-probs."""
    policy = load_policy(str(tiny_dir))
    params = SamplingParams(temperature=1.0, max_new_tokens=8, seed=5)
    prompts = ["1+2=", "34+5+67=", "9=", "12+30="]
    first = HFGenerator(policy.model, policy.tokenizer, decode=decode).generate(prompts, 6, params)
    counts: dict[int, int] = {}
    for c in (c for g in first for c in g.completions):
        for t in c.token_ids:
            counts[t] = counts.get(t, 0) + 1
    # Make the most sampled token the end token, so that rows end at many different steps.
    policy.tokenizer.eos_token_id = max(counts, key=counts.get)
    groups = HFGenerator(policy.model, policy.tokenizer, decode=decode).generate(prompts, 6, params)
    lengths = {len(c.token_ids) for g in groups for c in g.completions}
    assert len(lengths) >= 3 and max(lengths) == 8  # some rows ended early, others ran on
    for group in groups:
        for c in group.completions:
            recomputed = teacher_forced_logprobs(policy.model, group.prompt_token_ids, c.token_ids, 1.0)
            assert torch.allclose(recomputed, torch.tensor(c.logprobs), atol=1e-4)


def test_fp32_logits_of_a_bf16_model_are_the_float32_head_of_its_hidden_states(tiny_dir):
    import copy

    model = load_policy(str(tiny_dir), dtype="bfloat16").model
    ids = torch.tensor([[5, 6, 7, 8]])
    hidden = model.model(input_ids=ids).last_hidden_state
    assert model(input_ids=ids).logits.dtype == torch.bfloat16
    assert use_fp32_logits(model) and not use_fp32_logits(load_policy(str(tiny_dir)).model)  # float32: left alone
    logits = copy.deepcopy(model)(input_ids=ids).logits  # a copy (the generator's) keeps the float32 head
    assert logits.dtype == torch.float32
    assert torch.allclose(logits, hidden.float() @ model.lm_head.weight.float().T, atol=1e-5)
