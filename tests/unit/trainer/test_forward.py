"""The trainer's shared-prompt forward pass equals one plain pass per sequence."""
import random

import pytest
import torch

from swarmnode.tasks import TaskRef
from swarmnode.trainer.experience import ScoredGroup, collate
from swarmnode.trainer.forward import (
    completion_logprobs,
    length_chunks,
    micro_batches,
    resolve_chunking,
    row_lengths,
    training_bytes_per_position,
)
from tests.helpers import teacher_forced_logprobs


def test_length_chunks_by_hand():
    # sorted: 1,1,2,2,8 (rows 0,3,1,4,2); overhead 4: joining 2 pads two rows by 1 (cost 2 <= 4),
    # joining 8 pads four rows by 6 (24 > 4): a new chunk.
    assert length_chunks([1, 2, 8, 1, 2], overhead=4) == [[0, 3, 1, 4], [2]]
    assert length_chunks([1, 2, 8, 1, 2], overhead=24) == [[0, 3, 1, 4, 2]]
    assert length_chunks([3, 3, 3], overhead=0) == [[0, 1, 2]]  # equal lengths never split
    assert length_chunks([], overhead=0) == []


def test_micro_batches_by_hand():
    # sorted: 2,3,5,9 (rows 1,3,0,2); budget 10: 2 rows of <= 3 cost 6, a third row of 5 would cost 15.
    assert micro_batches([5, 2, 9, 3], budget=10) == [[1, 3], [0], [2]]
    assert micro_batches([5, 2, 9, 3], budget=36) == [[1, 3, 0, 2]]  # 4 rows x 9 = 36
    assert micro_batches([4, 4, 4], budget=1) == [[0], [1], [2]]  # a row over budget goes alone
    assert micro_batches([], budget=8) == []


def test_resolve_chunking_per_device():
    assert resolve_chunking("auto", torch.device("cpu")) == "length"
    assert resolve_chunking("auto", torch.device("cuda", 0)) == "plain"
    assert resolve_chunking("single", torch.device("cuda")) == "single"
    with pytest.raises(ValueError, match="training.forward_chunking"):
        resolve_chunking("fast", torch.device("cpu"))


def test_training_bytes_per_position_by_hand(tiny_model):
    # 1 layer x (34 x 16 + 10 x 32) x 4 / 2 + 12 x 16 = 1728 + 192
    assert training_bytes_per_position(tiny_model.config, 4) == 1920


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
# one chunk per length / one chunk in all / plain padded rows
@pytest.mark.parametrize("chunking,overhead", [("length", 0), ("length", 10_000), ("single", 0), ("plain", 0)])
def test_every_chunking_equals_teacher_forcing_values_and_gradients(tiny_model, arch, chunking, overhead):
    model = tiny_model if arch == "qwen2" else gpt2_model()
    groups = random_groups(16, seed=3)
    batch = collate(groups, pad_id=0)
    got = completion_logprobs(model, batch, temperature=0.7, overhead=overhead, chunking=chunking)
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


def test_row_lengths_count_prompt_and_completion_tokens():
    groups = random_groups(16, seed=3)
    batch = collate(groups, pad_id=0)
    assert row_lengths(batch) == [len(g.prompt_token_ids) + len(c) for g in groups for c in g.completion_token_ids]
