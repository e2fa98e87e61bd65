"""The trainer's shared-prompt forward pass equals one plain pass per sequence."""
import random

import pytest
import torch

from swarmnode.tasks import TaskRef
from swarmnode.trainer.experience import ScoredGroup, collate
from swarmnode.trainer.forward import completion_logprobs, length_chunks
from tests.helpers import teacher_forced_logprobs


def test_length_chunks_by_hand():
    # sorted: 1,1,2,2,8 (rows 0,3,1,4,2); overhead 4: joining 2 pads two rows by 1 (cost 2 <= 4),
    # joining 8 pads four rows by 6 (24 > 4): a new chunk.
    assert length_chunks([1, 2, 8, 1, 2], overhead=4) == [[0, 3, 1, 4], [2]]
    assert length_chunks([1, 2, 8, 1, 2], overhead=24) == [[0, 3, 1, 4, 2]]
    assert length_chunks([3, 3, 3], overhead=0) == [[0, 1, 2]]  # equal lengths never split
    assert length_chunks([], overhead=0) == []


def random_groups(vocab, seed):
    rng = random.Random(seed)
    groups = []
    for g in range(5):
        prompt = [rng.randrange(vocab) for _ in range(rng.randint(1, 7))]
        completions = [[rng.randrange(vocab) for _ in range(rng.choice([0, 1, 1, 2, 3, 9]))] for _ in range(rng.randint(1, 4))]
        groups.append(ScoredGroup(ref=TaskRef("sum2", 0, g), prompt_token_ids=prompt, completion_token_ids=completions,
                                  behavior_logprobs=None, rewards=[float(i % 2) for i in range(len(completions))],
                                  policy_version=0))
    return groups


def gpt2_model():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(1)
    config = GPT2Config(vocab_size=16, n_embd=16, n_layer=2, n_head=2, n_positions=32, bos_token_id=0, eos_token_id=0)
    return GPT2LMHeadModel(config).eval()  # no dropout: the two passes must see the same network


@pytest.mark.parametrize("arch", ["qwen2", "gpt2"])
@pytest.mark.parametrize("overhead", [0, 10_000])  # one chunk per length / one chunk in all
def test_shared_prompt_pass_equals_plain_pass_values_and_gradients(tiny_model, arch, overhead):
    model = tiny_model if arch == "qwen2" else gpt2_model()
    groups = random_groups(16, seed=3)
    batch = collate(groups, pad_id=0)
    got = completion_logprobs(model, batch, temperature=0.7, overhead=overhead)
    rows = [(g, c) for g in groups for c in g.completion_token_ids]
    expected = torch.zeros_like(got)
    assert 0 in {len(c) for _, c in rows}  # an empty completion is in the batch: it scores nothing
    for r, (g, c) in enumerate(rows):
        if c:
            expected[r, : len(c)] = teacher_forced_logprobs(model, g.prompt_token_ids, c, 0.7)
    assert torch.allclose(got, expected, atol=1e-5)

    weights = torch.linspace(-1, 1, got.numel()).reshape(got.shape)
    grad_got = torch.autograd.grad((got * weights).sum(), list(model.parameters()))
    grad_expected = torch.autograd.grad((expected * weights).sum(), list(model.parameters()))
    for a, b in zip(grad_got, grad_expected):
        assert torch.allclose(a, b, atol=1e-5)


def test_select_keeps_chosen_rows_and_their_prompts(tiny_model):
    groups = random_groups(16, seed=4)
    batch = collate(groups, pad_id=0)
    keep = batch.group_ids != 1
    small = batch.select(keep)
    assert small.group_ids.max() + 1 == len(groups) - 1 == small.prompt_ids.shape[0]
    full = completion_logprobs(tiny_model, batch)[keep]
    part = completion_logprobs(tiny_model, small)
    assert torch.allclose(full[:, : part.shape[1]], part, atol=1e-5)
    assert not full[:, part.shape[1]:].any()  # trimmed columns held padding only
