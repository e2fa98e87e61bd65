"""trainer/experience.py: collating scored groups into one padded batch, and selecting rows of it."""
import torch

from swarmnode.trainer.experience import collate
from tests.unit.trainer.helpers import uneven_group as group


def test_collate_keeps_each_prompt_once_and_completions_as_rows():
    batch = collate([group(), group(prompt=(4,), completions=((8, 9, 10),), rewards=(1.0,))], pad_id=0)
    assert batch.prompt_ids.tolist() == [[1, 2, 3], [0, 0, 4]]  # left-padded: prompts end together
    assert batch.prompt_mask.tolist() == [[1, 1, 1], [0, 0, 1]]
    assert batch.completion_ids.tolist() == [[5, 6, 0], [7, 0, 0], [8, 9, 10]]  # right-padded
    assert batch.completion_mask.tolist() == [[1, 1, 0], [1, 0, 0], [1, 1, 1]]
    assert batch.behavior_logp.tolist() == [[-0.5, -0.5, 0], [-0.5, 0, 0], [-0.5, -0.5, -0.5]]
    assert batch.rewards.tolist() == [1.0, 0.0, 1.0] and batch.group_ids.tolist() == [0, 0, 1]
    assert batch.num_completion_tokens == 6 and batch.completion_lengths.tolist() == [2, 1, 3]


def test_select_drops_rows_and_trims_padding():
    batch = collate([group(prompt=(7, 7, 7, 7), completions=((5, 6, 7, 8), (9,))),
                     group(completions=((1,), (2,))), group(completions=((3,), (4,)))], pad_id=0)
    small = batch.select(torch.tensor([False, True, False, False, True, True]))
    assert small.prompt_ids.tolist() == [[7, 7, 7, 7], [0, 1, 2, 3]]
    assert small.completion_ids.tolist() == [[9], [3], [4]]  # trimmed to the longest kept completion
    assert small.completion_mask.tolist() == [[1], [1], [1]]
    assert small.group_ids.tolist() == [0, 1, 1]  # groups renumbered: the middle one is gone
