"""trainer/trainer.py: one policy-gradient step (direction, zero-advantage groups, micro-batching,
peers' implausible samples)."""
import copy
import math

import pytest
import torch

from swarmnode.trainer.trainer import Trainer, TrainerConfig
from tests.helpers import teacher_forced_logprobs
from tests.unit.trainer.helpers import uneven_group as group


def sequence_logprob(model, prompt, completion):
    with torch.no_grad():
        return float(teacher_forced_logprobs(model, prompt, completion).sum())


def test_step_raises_rewarded_completion_and_lowers_the_other(tiny_model):
    prompt, good, bad = [1, 2, 3], [5, 6], [7, 8]
    before = (sequence_logprob(tiny_model, prompt, good), sequence_logprob(tiny_model, prompt, bad))
    trainer = Trainer(tiny_model, pad_id=0, config=TrainerConfig(lr=1e-2))
    g = group(rewards=(1.0, 0.0), completions=(good, bad), prompt=prompt)
    g.behavior_logprobs = [[-2.8, -2.8], [-2.8, -2.8]]
    result = trainer.step([g])
    after = (sequence_logprob(tiny_model, prompt, good), sequence_logprob(tiny_model, prompt, bad))
    assert result.trained and result.version == 1 and result.groups_used == 1
    assert after[0] > before[0] and after[1] < before[1]


def test_zero_advantage_groups_do_not_step(tiny_model):
    trainer = Trainer(tiny_model, pad_id=0, config=TrainerConfig())
    weights = trainer.weights()
    result = trainer.step([group(rewards=(1.0, 1.0)), group(rewards=(0.0, 0.0))])
    assert not result.trained and result.version == 0 and result.reward_mean == 0.5
    assert all(torch.equal(weights[k], v) for k, v in tiny_model.state_dict().items())


def test_dropping_zero_advantage_groups_leaves_the_update_unchanged(tiny_model):
    informative = group(rewards=(1.0, 0.0), completions=((5, 6), (7, 8)))
    flat = group(rewards=(0.0, 0.0), completions=((9, 9, 9, 9, 9), (4,)))
    alone, mixed = copy.deepcopy(tiny_model), copy.deepcopy(tiny_model)
    Trainer(alone, 0, TrainerConfig(lr=1e-2)).step([informative])
    Trainer(mixed, 0, TrainerConfig(lr=1e-2)).step([informative, flat])
    for a, b in zip(alone.parameters(), mixed.parameters()):
        assert torch.allclose(a, b, atol=1e-6)


def mixed_groups():
    """Local and peers' groups of varied lengths, one peer's without behaviour log-probs."""
    groups = [group(rewards=(1.0, 0.0, 0.5), completions=((5, 6), (7,), (8, 9, 10, 11)), prompt=(1, 2, 3)),
              group(rewards=(0.0, 1.0), completions=((4, 4, 4), (3,)), prompt=(9,), source="peerA"),
              group(rewards=(1.0, 0.0), completions=((2, 12, 13, 14, 15), (6, 6)), prompt=(3, 1), source="peerB")]
    groups[2].behavior_logprobs = None
    return groups


@pytest.mark.parametrize("kl_coef", [0.0, 0.1])
def test_micro_batched_step_equals_the_one_shot_step(tiny_model, kl_coef):
    """Gradient accumulation over micro-batches gives the one-shot step's loss, stats and gradients."""
    config = {"lr": 1e-3, "max_grad_norm": 1e9, "kl_coef": kl_coef, "external_positive_only": True}
    results, models = {}, {}
    for budget in (None, 8):  # None: the whole batch fits; 8 positions: one or two rows per micro-batch
        models[budget] = copy.deepcopy(tiny_model)
        trainer = Trainer(models[budget], pad_id=0, config=TrainerConfig(micro_batch_tokens=budget, **config))
        results[budget] = trainer.step(mixed_groups())
    assert results[None].stats["micro_batches"] == 1 and results[8].stats["micro_batches"] >= 4
    assert results[None].stats["grad_norm"] > 1e-3
    assert results[8].loss == pytest.approx(results[None].loss, abs=1e-6)
    for name in ("clip_fraction", "mean_ratio", "mean_behavior_weight", "approx_kl", "grad_norm"):
        assert results[8].stats[name] == pytest.approx(results[None].stats[name], abs=1e-5)
    for one_shot, micro in zip(models[None].parameters(), models[8].parameters()):
        assert torch.allclose(one_shot.grad, micro.grad, atol=1e-6)
        assert torch.allclose(one_shot, micro, atol=1e-6)


def test_micro_batched_step_drops_an_implausible_peer_like_the_one_shot_step(tiny_model):
    groups = mixed_groups()
    groups[1].behavior_logprobs = [[-9.0] * len(c) for c in groups[1].completion_token_ids]  # understated: inflated weights
    dropped = {}
    for budget in (None, 8):
        trainer = Trainer(copy.deepcopy(tiny_model), pad_id=0, config=TrainerConfig(micro_batch_tokens=budget))
        dropped[budget] = trainer.step(groups).implausible
    assert dropped[None] == dropped[8] == {"peerA": 2}


def test_trainer_drops_and_reports_samples_with_understated_logprobs(tiny_model):
    from swarmnode.tasks import TaskRef
    from swarmnode.trainer.experience import ScoredGroup
    from swarmnode.trainer.trainer import Trainer, TrainerConfig
    from tests.helpers import teacher_forced_logprobs

    prompt, completions = [1, 2, 3], [[5, 6], [7, 8]]
    with torch.no_grad():
        true = [teacher_forced_logprobs(tiny_model, prompt, c).tolist() for c in completions]

    def peer_group(source, shift):
        return ScoredGroup(ref=TaskRef("sum2", 0, 0), prompt_token_ids=prompt, completion_token_ids=completions,
                           behavior_logprobs=[[x - shift for x in lp] for lp in true], rewards=[1.0, 0.0],
                           policy_version=0, source=source)

    import copy

    local = peer_group("local", 0.0)
    clean = Trainer(copy.deepcopy(tiny_model), pad_id=0, config=TrainerConfig())
    trainer = Trainer(tiny_model, pad_id=0, config=TrainerConfig())  # the default gap: 1.5 nats/token
    # The liar's weights sit at the cap (5) on every token: a gap of log 5 = 1.61 nats/token.
    result = trainer.step([local, peer_group("honest", 0.0), peer_group("liar", math.log(5))])
    assert result.trained and result.implausible == {"liar": 2}
    # Its samples leave the objective entirely: the update equals one without the liar's group.
    assert clean.step([local, peer_group("honest", 0.0)]).implausible == {}
    for (name, got), want in zip(trainer.model.named_parameters(), clean.model.parameters()):
        assert torch.allclose(got, want, atol=1e-6), name


def test_one_stray_honest_sample_is_not_implausible(tiny_model):
    """A sample far off this policy is fine when the sender's samples as a whole are not."""
    from swarmnode.tasks import TaskRef
    from swarmnode.trainer.experience import ScoredGroup
    from swarmnode.trainer.trainer import Trainer, TrainerConfig
    from tests.helpers import teacher_forced_logprobs

    prompt, completions = [1, 2, 3], [[5, 6], [7, 8], [9, 10], [11, 12]]
    with torch.no_grad():
        true = [teacher_forced_logprobs(tiny_model, prompt, c).tolist() for c in completions]
    shifts = [2.0, -1.0, -0.5, -0.6]  # one sample 2 nats/token "too unlikely", the rest the other way
    group = ScoredGroup(ref=TaskRef("sum2", 0, 0), prompt_token_ids=prompt, completion_token_ids=completions,
                        behavior_logprobs=[[x - d for x in lp] for lp, d in zip(true, shifts)],
                        rewards=[1.0, 0.0, 1.0, 0.0], policy_version=0, source="honest")
    result = Trainer(tiny_model, pad_id=0, config=TrainerConfig()).step([group])
    assert result.trained and result.implausible == {}


def test_an_honest_peer_is_judged_on_all_its_samples_not_only_those_trained_on(tiny_model):
    """With external_positive_only, only a peer's above-baseline samples are trained on. This
    policy may find those right answers likelier than the sender did (here +2 nats/token) and
    its wrong ones less likely (-2.5): pooled over all of them the sender is honest (-0.25)."""
    from swarmnode.tasks import TaskRef
    from swarmnode.trainer.experience import ScoredGroup
    from tests.helpers import teacher_forced_logprobs

    prompt, completions = [1, 2, 3], [[5, 6], [7, 8], [9, 10], [11, 12]]
    with torch.no_grad():
        true = [teacher_forced_logprobs(tiny_model, prompt, c).tolist() for c in completions]
    shifts = [2.0, -2.5, 2.0, -2.5]
    peer = ScoredGroup(ref=TaskRef("sum2", 0, 0), prompt_token_ids=prompt, completion_token_ids=completions,
                       behavior_logprobs=[[x - d for x in lp] for lp, d in zip(true, shifts)],
                       rewards=[1.0, 0.0, 1.0, 0.0], policy_version=0, source="honest")
    local = group(rewards=(1.0, 0.0), completions=((5, 6), (7, 8)), prompt=(1, 2, 3))
    config = TrainerConfig(external_positive_only=True)
    result = Trainer(tiny_model, pad_id=0, config=config).step([local, peer])
    assert result.trained and result.implausible == {}
