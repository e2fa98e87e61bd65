"""trainer/trainer.py with peers' groups: the local reward mean, and groups without behaviour logprobs
(possibly another model's) trained as on-policy."""
import copy
import math

import pytest
import torch

from swarmnode.trainer.trainer import Trainer, TrainerConfig
from tests.helpers import teacher_forced_logprobs
from tests.unit.trainer.helpers import group


def test_local_reward_mean_counts_local_groups_only(tiny_model):
    trainer = Trainer(tiny_model, pad_id=0, config=TrainerConfig(lr=1e-3))
    groups = [
        group(rewards=(1.0, 0.0)),
        group(rewards=(1.0, 1.0, 1.0)),
        group(source="peerA", rewards=(0.0, 0.0)),
    ]
    result = trainer.step(groups)
    assert result.trained
    assert result.local_reward_mean == pytest.approx(4 / 5)
    assert result.reward_mean == pytest.approx(4 / 7)
    assert (result.local_groups, result.external_groups, result.groups, result.groups_used) == (2, 1, 3, 1)


def test_local_reward_mean_without_local_groups_or_gradient(tiny_model):
    trainer = Trainer(tiny_model, pad_id=0, config=TrainerConfig())
    only_external = trainer.step([group(source="p", rewards=(1.0, 0.0)), group(source="q", rewards=(1.0, 1.0))])
    assert only_external.trained and only_external.local_reward_mean is None
    assert (only_external.local_groups, only_external.external_groups) == (0, 2)
    # No gradient (every group flat): the mix is still reported.
    flat = trainer.step([group(rewards=(1.0, 1.0)), group(source="p", rewards=(0.0, 0.0, 0.0))])
    assert not flat.trained and flat.local_reward_mean == 1.0 and flat.reward_mean == pytest.approx(2 / 5)
    assert (flat.local_groups, flat.external_groups) == (1, 1)


def token_logprobs_of(model, prompt, completion):
    with torch.no_grad():
        return teacher_forced_logprobs(model, prompt, completion).tolist()


def test_group_without_behaviour_logprobs_trains_as_on_policy(tiny_model):
    prompt, good, bad = [1, 2, 3], [5, 6], [7, 8, 9]
    foreign = group(source="peerA", rewards=(1.0, 0.0), completions=(good, bad), prompt=prompt, logprobs=None)
    on_policy = copy.deepcopy(foreign)
    on_policy.behavior_logprobs = [token_logprobs_of(tiny_model, prompt, c) for c in (good, bad)]

    a, b = copy.deepcopy(tiny_model), copy.deepcopy(tiny_model)
    result = Trainer(a, 0, TrainerConfig(lr=1e-2)).step([foreign])
    reference = Trainer(b, 0, TrainerConfig(lr=1e-2)).step([on_policy])
    assert result.trained and result.version == 1 and math.isfinite(result.loss)
    # Behaviour = current policy: importance weight exactly 1, ratio 1 before the update.
    assert result.stats["mean_behavior_weight"] == pytest.approx(1.0, abs=1e-6)
    assert result.stats["mean_ratio"] == pytest.approx(1.0, abs=1e-6)
    assert result.loss == pytest.approx(reference.loss, abs=1e-5)
    for pa, pb in zip(a.parameters(), b.parameters()):
        assert torch.allclose(pa, pb, atol=1e-5)
    # ...and it moved the policy towards the rewarded completion.
    assert sum(token_logprobs_of(a, prompt, good)) > sum(token_logprobs_of(tiny_model, prompt, good))


def test_mixed_known_and_unknown_behaviour_in_one_batch(tiny_model):
    known = group(rewards=(1.0, 0.0), completions=((5, 6), (7,)), logprobs=-50.0)  # far off-policy: capped to 0
    unknown = group(source="peerB", rewards=(0.0, 1.0), completions=((9, 10, 11), (4,)), logprobs=None)
    result = Trainer(tiny_model, 0, TrainerConfig(lr=1e-2, behavior_weight_cap=5.0)).step([known, unknown])
    assert result.trained and result.groups_used == 2 and result.completion_tokens == 7
    # Weights: 0 on the 3 tokens of the known group (over the cap), 1 on the 4 of the unknown one.
    assert result.stats["mean_behavior_weight"] == pytest.approx(4 / 7, abs=1e-6)
