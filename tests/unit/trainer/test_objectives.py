"""The RL objective against hand-computed values (the arithmetic is in the comments)."""
import math

import pytest
import torch
from torch import nn

from swarmnode.trainer import (
    decoupled_ppo_loss,
    group_advantages,
    k3_kl,
    nonzero_advantage_groups,
    staleness_mask,
    staleness_weight,
    token_logprobs,
)
from swarmnode.trainer.objectives import mean_logprob_gap, truncate_behavior_logp

F64 = torch.float64


def t(values, dtype=F64):
    return torch.tensor(values, dtype=dtype)


def assert_close(actual, expected, tol=1e-9):
    actual, expected = torch.as_tensor(actual, dtype=F64), torch.as_tensor(expected, dtype=F64)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert torch.allclose(actual, expected, rtol=0, atol=tol), (actual, expected)


# ---------------------------------------------------------------- group advantages


def test_group_advantages_one_group():
    # [1, 0, 0, 1]: mean .5, population std sqrt(4 * .25 / 4) = .5
    # -> A = [.5, -.5, -.5, .5] / (.5 + eps)
    eps = 1e-6
    advantages = group_advantages(t([1, 0, 0, 1]), torch.tensor([0, 0, 0, 0]), eps=eps)
    assert_close(advantages, t([0.5, -0.5, -0.5, 0.5]) / (0.5 + eps))
    assert_close(group_advantages(t([1, 0, 0, 1]), torch.tensor([0, 0, 0, 0]), eps=0.0), [1.0, -1.0, -1.0, 1.0])


def test_group_advantages_uses_population_std():
    # [0, 0, 3]: mean 1, population var (1 + 1 + 4) / 3 = 2 -> A = [-1, -1, 2] / sqrt(2)
    # (the unbiased var would be 6 / 2 = 3)
    advantages = group_advantages(t([[0, 0, 3]]), eps=0.0)
    assert_close(advantages, t([[-1, -1, 2]]) / math.sqrt(2))


def test_group_advantages_interleaved_non_contiguous_groups():
    # group 5: rewards [1, 3] -> mean 2, std 1 -> [-1, 1]
    # group 2: rewards [4, 0] -> mean 2, std 2 -> [1, -1]
    rewards, groups = t([1, 4, 3, 0]), torch.tensor([5, 2, 5, 2])
    assert_close(group_advantages(rewards, groups, eps=0.0), [-1.0, 1.0, 1.0, -1.0])
    # Dr. GRPO, only centered: group 5 -> [-1, 1], group 2 -> [2, -2]
    assert_close(group_advantages(rewards, groups, scale_by_std=False), [-1.0, 2.0, 1.0, -2.0])


def test_group_advantages_grid_matches_flat_and_constant_group_is_zero():
    grid = t([[1, 0, 0, 1], [2, 2, 2, 2]])
    expected_row0 = t([0.5, -0.5, -0.5, 0.5]) / (0.5 + 1e-6)
    by_rows = group_advantages(grid)
    assert by_rows.shape == (2, 4)
    assert_close(by_rows[0], expected_row0)
    assert_close(by_rows[1], [0.0, 0.0, 0.0, 0.0])  # std 0 -> 0 / (0 + eps) = 0
    flat = group_advantages(grid.flatten(), torch.tensor([0, 0, 0, 0, 1, 1, 1, 1]))
    assert_close(flat, by_rows.flatten())


def test_group_advantages_single_sample_and_integer_rewards():
    # group 0: [1, 0] -> mean .5, std .5 -> [1, -1] (up to eps); group 1: [7] alone -> 0 / (0 + eps) = 0
    advantages = group_advantages(torch.tensor([1, 0, 7]), torch.tensor([0, 0, 1]), eps=1e-6)
    assert advantages.dtype == torch.float32
    assert_close(advantages, [0.5 / (0.5 + 1e-6), -0.5 / (0.5 + 1e-6), 0.0], tol=1e-6)


def test_nonzero_advantage_groups():
    # groups: 0 -> [1, 1] constant, 1 -> [0, 1] varies, 2 -> [2, 2] constant
    rewards, groups = t([1, 1, 0, 1, 2, 2]), torch.tensor([0, 0, 1, 1, 2, 2])
    assert nonzero_advantage_groups(rewards, groups).tolist() == [False, False, True, True, False, False]
    assert nonzero_advantage_groups(t([3, 0, 3]), torch.tensor([9, 4, 9])).tolist() == [False, False, False]


# ---------------------------------------------------------------- decoupled PPO loss


def loss_for(ratios, advantages, mask=None, behavior_weights=None, **kwargs):
    """Build inputs with the given ratios pi/pi_prox and weights pi_prox/pi_behav (proximal_logp = 0)."""
    ratios = t(ratios)
    logp = ratios.log().requires_grad_()
    proximal = torch.zeros_like(ratios)
    behavior = -t(behavior_weights).log() if behavior_weights is not None else torch.zeros_like(ratios)
    mask = torch.ones_like(ratios, dtype=torch.bool) if mask is None else torch.tensor(mask, dtype=torch.bool)
    loss, stats = decoupled_ppo_loss(logp, proximal, behavior, t(advantages), mask, **kwargs)
    loss.backward()
    return loss, stats, logp.grad


def test_ppo_clip_positive_advantage():
    # A = +1, eps_low .2, eps_high .28, ratios [1.5, .5, 1.1]:
    #   1.5: min(1.5, 1.28) = 1.28 (clipped, no gradient)
    #   .5 : min(.5, .8)    = .5
    #   1.1: min(1.1, 1.1)  = 1.1
    # loss = -(1.28 + .5 + 1.1) / 3 = -.96
    # d loss / d logp_t = -ratio_t * A / 3 where unclipped -> [0, -.5/3, -1.1/3]
    loss, stats, grad = loss_for([[1.5, 0.5, 1.1]], [1.0])
    assert_close(loss, -0.96)
    assert_close(grad, [[0.0, -0.5 / 3, -1.1 / 3]])
    assert stats["clip_fraction"] == pytest.approx(1 / 3)
    assert stats["mean_ratio"] == pytest.approx((1.5 + 0.5 + 1.1) / 3)


def test_ppo_clip_negative_advantage():
    # A = -1, ratios [1.5, .5, 1.1]:
    #   1.5: min(-1.5, -1.28) = -1.5
    #   .5 : min(-.5, -.8)    = -.8 (clipped, no gradient)
    #   1.1: min(-1.1, -1.1)  = -1.1
    # loss = (1.5 + .8 + 1.1) / 3 = 3.4 / 3;  gradient = +ratio / 3 where unclipped
    loss, stats, grad = loss_for([[1.5, 0.5, 1.1]], [-1.0])
    assert_close(loss, 3.4 / 3)
    assert_close(grad, [[1.5 / 3, 0.0, 1.1 / 3]])
    assert stats["clip_fraction"] == pytest.approx(1 / 3)


def test_ppo_clip_is_asymmetric():
    # A = +1, ratio 1.25: within 1 + eps_high = 1.28 (not clipped), beyond 1 + .2
    loss, stats, _ = loss_for([[1.25]], [1.0])
    assert_close(loss, -1.25)
    assert stats["clip_fraction"] == 0.0
    loss, stats, _ = loss_for([[1.25]], [1.0], eps_high=0.2)
    assert_close(loss, -1.2)
    assert stats["clip_fraction"] == 1.0
    # A = -1, ratio .75: below 1 - eps_low = .8 -> min(-.75, -.8) = -.8
    loss, _, _ = loss_for([[0.75]], [-1.0])
    assert_close(loss, 0.8)


def test_ppo_mask_token_mean_over_batch_and_padding_ignored():
    # mask [[1, 1, 0], [1, 0, 0]], A = [1, -2], ratios row 0 [1.1, .9, -], row 1 [1.2, -, -]
    #   row 0: min(1.1, 1.1) = 1.1, min(.9, .9) = .9
    #   row 1: min(-2.4, -2 * 1.2) = -2.4
    # token mean: loss = -(1.1 + .9 - 2.4) / 3 = .4 / 3   (a per-sequence mean would give .7)
    nan = float("nan")
    logp = t([[math.log(1.1), math.log(0.9), nan], [math.log(1.2), nan, math.inf]]).requires_grad_()
    proximal = t([[0.0, 0.0, nan], [0.0, -math.inf, nan]])
    behavior = t([[0.0, 0.0, math.inf], [0.0, nan, nan]])
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    loss, stats = decoupled_ppo_loss(logp, proximal, behavior, t([1.0, -2.0]), mask)
    loss.backward()
    assert_close(loss, 0.4 / 3)
    assert_close(logp.grad, [[-1.1 / 3, -0.9 / 3, 0.0], [2.4 / 3, 0.0, 0.0]])
    assert stats["mean_ratio"] == pytest.approx((1.1 + 0.9 + 1.2) / 3)
    assert all(math.isfinite(v) for v in stats.values())


def test_ppo_empty_mask_gives_zero_loss():
    loss, stats, grad = loss_for([[1.3, 0.7]], [1.0], mask=[[0, 0]])
    assert loss.item() == 0.0
    assert_close(grad, [[0.0, 0.0]])


def test_behavior_weight_and_cap():
    # proximal - behavior = log 2 -> w = 2; ratio 1, A = 1 -> J = 2 * 1, loss = -2
    loss, stats, grad = loss_for([[1.0]], [1.0], behavior_weights=[[2.0]])
    assert_close(loss, -2.0)
    assert_close(grad, [[-2.0]])
    assert stats["mean_behavior_weight"] == pytest.approx(2.0)
    # cap 1.5 -> the w = 2 token is dropped (weight 0, AReaL), the w = 0.5 token stays:
    # loss = -(0 + 0.5) / 2 tokens
    loss, stats, _ = loss_for([[1.0, 1.0]], [1.0], behavior_weights=[[2.0, 0.5]], behavior_weight_cap=1.5)
    assert_close(loss, -(0.0 + 0.5) / 2)
    assert stats["mean_behavior_weight"] == pytest.approx(0.25)
    # the weight multiplies the clipped objective too: ratio 1.5, A = 1, w = 2 -> 2 * 1.28
    loss, _, grad = loss_for([[1.5]], [1.0], behavior_weights=[[2.0]])
    assert_close(loss, -2.56)
    assert_close(grad, [[0.0]])


def test_only_current_logp_gets_gradient():
    logp = t([[-1.0, -2.0]]).requires_grad_()
    proximal = t([[-1.1, -1.9]]).requires_grad_()
    behavior = t([[-1.2, -1.5]]).requires_grad_()
    advantages = t([0.7]).requires_grad_()
    ref = t([[-1.0, -1.0]]).requires_grad_()
    loss, _ = decoupled_ppo_loss(logp, proximal, behavior, advantages, torch.ones(1, 2), ref_logp=ref, kl_coef=0.1)
    loss.backward()
    assert logp.grad is not None
    assert proximal.grad is None and behavior.grad is None and advantages.grad is None and ref.grad is None


def test_approx_kl_stat():
    # ratios [2, 1]: k3 with pi_prox sampling = (r - 1) - log r -> [1 - ln 2, 0], mean (1 - ln 2) / 2
    _, stats, _ = loss_for([[2.0, 1.0]], [1.0])
    assert stats["approx_kl"] == pytest.approx((1 - math.log(2)) / 2)
    _, stats, _ = loss_for([[1.0, 1.0]], [1.0])
    assert stats["approx_kl"] == 0.0


# ---------------------------------------------------------------- KL penalty


def test_k3_kl_values():
    # ref - logp = d: k3 = e^d - d - 1
    #   d = ln 2  -> 2 - ln 2 - 1   = 1 - ln 2  ~ .3069
    #   d = -ln 2 -> .5 + ln 2 - 1  = ln 2 - .5 ~ .1931
    #   d = 0     -> 0
    logp = t([0.0, 0.0, -1.3])
    ref = t([math.log(2), -math.log(2), -1.3])
    assert_close(k3_kl(logp, ref), [1 - math.log(2), math.log(2) - 0.5, 0.0])


def test_k3_kl_nonnegative():
    generator = torch.Generator().manual_seed(0)
    logp = -torch.rand(1000, generator=generator, dtype=F64) * 5
    ref = -torch.rand(1000, generator=generator, dtype=F64) * 5
    assert (k3_kl(logp, ref) >= 0).all()
    assert (k3_kl(logp, logp) == 0).all()


def test_kl_penalty_adds_masked_mean_k3():
    # ratios 1, A = 0 -> policy term 0; ref - logp = [ln 2, -ln 2, (masked)]
    # loss = .5 * ((1 - ln 2) + (ln 2 - .5)) / 2 = .5 * .25 = .125
    logp = t([[-1.0, -1.0, -1.0]])
    ref = logp + t([[math.log(2), -math.log(2), 5.0]])
    mask = torch.tensor([[1, 1, 0]])
    loss, stats = decoupled_ppo_loss(logp, logp, logp, t([0.0]), mask, ref_logp=ref, kl_coef=0.5)
    assert_close(loss, 0.125)
    assert stats["kl_to_ref"] == pytest.approx(0.25)
    plain, plain_stats = decoupled_ppo_loss(logp, logp, logp, t([0.0]), mask)
    assert plain.item() == 0.0 and "kl_to_ref" not in plain_stats


# ---------------------------------------------------------------- staleness


def test_staleness_mask_edges():
    # current n = 5, eta = 2; versions v -> lag n - v:
    #   5 -> 0 keep, 4 -> 1 keep, 3 -> 2 == eta keep, 2 -> 3 = eta + 1 drop, 6 -> -1 future drop
    keep = staleness_mask(torch.tensor([5, 4, 3, 2, 6]), current_version=5, max_staleness=2)
    assert keep.dtype == torch.bool
    assert keep.tolist() == [True, True, True, False, False]
    # eta = 0: strictly on-policy
    assert staleness_mask(torch.tensor([5, 4, 6]), 5, 0).tolist() == [True, False, False]
    assert staleness_mask([0, 1], 1, 1).tolist() == [True, True]
    with pytest.raises(ValueError):
        staleness_mask(torch.tensor([0]), 0, -1)


def test_staleness_weight_values():
    # (1 + tau) ** -a
    assert staleness_weight(0, 0.5) == 1.0
    assert staleness_weight(1, 1.0) == pytest.approx(0.5)
    assert staleness_weight(3, 0.5) == pytest.approx(0.5)  # 4 ** -.5
    assert staleness_weight(3, 2.0) == pytest.approx(1 / 16)
    assert staleness_weight(7, 0.0) == 1.0
    assert_close(staleness_weight(t([0, 1, 3]), 1.0), [1.0, 0.5, 0.25])
    with pytest.raises(ValueError):
        staleness_weight(-1, 1.0)
    with pytest.raises(ValueError):
        staleness_weight(t([0, -0.5]), 1.0)


# ---------------------------------------------------------------- token log-probs


def test_token_logprobs_hand_values_and_float32():
    # logits [0, 0, ln 2] -> probs [1, 1, 2] / 4 = [.25, .25, .5]
    logits = torch.tensor([[[0.0, 0.0, math.log(2)], [0.0, 0.0, math.log(2)]]])
    logp = token_logprobs(logits, torch.tensor([[2, 0]]))
    assert logp.shape == (1, 2)
    assert_close(logp, [[math.log(0.5), math.log(0.25)]], tol=1e-6)
    low_precision = token_logprobs(logits.to(torch.bfloat16), torch.tensor([[2, 0]]))
    assert low_precision.dtype == torch.float32


def test_token_logprobs_matches_log_softmax():
    generator = torch.Generator().manual_seed(1)
    logits = torch.randn(3, 5, 11, generator=generator) * 4
    tokens = torch.randint(0, 11, (3, 5), generator=generator)
    expected = torch.log_softmax(logits, dim=-1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(token_logprobs(logits, tokens), expected, atol=1e-5)


# ---------------------------------------------------------------- direction of the update


class TinyLM(nn.Module):
    """Next-token scores from the previous token only: embedding -> linear, vocab 8."""

    def __init__(self, vocab=8, width=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.head = nn.Linear(width, vocab)

    def forward(self, tokens):
        return self.head(self.embed(tokens))


def sequence_logp(model, sequence):
    """Sum of log-probs of sequence[:, 1:] given the previous tokens, and the per-token values."""
    per_token = token_logprobs(model(sequence[:, :-1]), sequence[:, 1:])
    return per_token.sum().item(), per_token


@pytest.mark.parametrize("advantage, should_increase", [(1.0, True), (-1.0, False)])
def test_one_sgd_step_moves_sequence_logprob_with_advantage_sign(advantage, should_increase):
    torch.manual_seed(0)
    model = TinyLM()
    # sample a completion from the model itself, starting at token 0
    sequence = [0]
    with torch.no_grad():
        for _ in range(6):
            probs = torch.softmax(model(torch.tensor([sequence[-1:]]))[0, -1], dim=-1)
            sequence.append(int(torch.multinomial(probs, 1)))
    sequence = torch.tensor([sequence])

    before, per_token = sequence_logp(model, sequence)
    proximal = per_token.detach()
    behavior = proximal - 0.1  # a slightly stale generator: w = e^0.1 on every token
    mask = torch.ones_like(per_token, dtype=torch.bool)
    loss, _ = decoupled_ppo_loss(per_token, proximal, behavior, torch.tensor([advantage]), mask)
    loss.backward()
    with torch.no_grad():  # one plain SGD step, lr 0.1 (torch.optim would import dynamo: ~1 s)
        for parameter in model.parameters():
            parameter -= 0.1 * parameter.grad

    after, _ = sequence_logp(model, sequence)
    assert (after > before) if should_increase else (after < before)
    assert abs(after - before) > 1e-4


def test_shaped_objective_for_another_models_text_by_hand():
    from swarmnode.trainer.objectives import shaped_objective

    # f(p) = p / (p + 0.1); d f / d logp = 0.1 p / (p + 0.1)^2
    #   p = 0.1: f = 0.5,       gradient 0.01 / 0.04 = 0.25 (the largest: a quarter of A)
    #   p = 0.9: f = 0.9,       gradient 0.09 / 1.0  = 0.09
    #   p = 0.01: f = 1/11,     gradient 0.001 / 0.0121 = 0.0826...
    logp = t([[math.log(0.1), math.log(0.9), math.log(0.01)]]).requires_grad_()
    j = shaped_objective(logp, t([[2.0]]), 0.1)
    assert_close(j, [[1.0, 1.8, 2.0 / 11]])
    j.sum().backward()
    assert_close(logp.grad, [[0.5, 0.18, 2 * 0.001 / 0.0121]])


def test_shaped_rows_replace_the_ppo_term_only_on_another_models_rows():
    # Row 0 (own sample, ratio 1.1, A = 1): PPO term 1.1. Row 1 (another model's text, p = 0.1,
    # A = 1): shaped 0.5, however its proximal / behaviour inputs look. Token mean over 2.
    logp = t([[math.log(1.1) + math.log(0.5)], [math.log(0.1)]]).requires_grad_()
    proximal = t([[math.log(0.5)], [math.log(0.1)]])
    loss, _ = decoupled_ppo_loss(logp, proximal, proximal, t([1.0, 1.0]), torch.ones(2, 1),
                                 shaped_rows=torch.tensor([False, True]), shaping_gamma=0.1)
    loss.backward()
    assert_close(loss, -(1.1 + 0.5) / 2)
    assert_close(logp.grad, [[-1.1 / 2], [-0.25 / 2]])


def test_external_sample_mask_by_hand():
    from swarmnode.trainer.objectives import external_sample_mask

    advantages = torch.tensor([1.5, -0.5, -0.5, 0.0, -1.0])
    external = torch.tensor([True, True, False, True, False])
    # Only a peer's sample with negative advantage leaves: row 1.
    assert external_sample_mask(advantages, external).tolist() == [1.0, 0.0, 1.0, 1.0, 1.0]


def test_mean_logprob_gap_by_hand():
    logp = torch.tensor([[-1.0, -2.0, -9.0], [-0.5, -0.5, -0.5]])
    behavior = torch.tensor([[-1.5, -3.0, 0.0], [-0.5 - math.log(5)] * 3])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    # Row 0: ((-1 + 1.5) + (-2 + 3)) / 2 = 0.75 (the masked token is ignored); row 1: log 5 per token.
    assert mean_logprob_gap(logp, behavior, mask).tolist() == pytest.approx([0.75, math.log(5)])


def test_truncated_behavior_logp_caps_peer_weights_at_one():
    behavior = torch.tensor([[-2.0, -0.1], [-2.0, -0.1]])
    proximal = torch.tensor([[-1.0, -1.0], [-1.0, -1.0]])
    got = truncate_behavior_logp(behavior, proximal, torch.tensor([True, False]))
    # Peer row: w = exp(-1 - -2) = e > 1 becomes 1; w = exp(-0.9) < 1 stays. Local row unchanged.
    assert got.tolist() == [[-1.0, pytest.approx(-0.1)], [-2.0, pytest.approx(-0.1)]]
    assert torch.exp(proximal - got)[0].tolist() == pytest.approx([1.0, math.exp(-0.9)])


def test_sender_mean_by_hand():
    from swarmnode.trainer.objectives import sender_mean

    values = torch.tensor([2.0, -1.0, 4.0, 0.5])
    weights = torch.tensor([1.0, 3.0, 2.0, 0.0])
    senders = torch.tensor([7, 7, 9, 3])
    # sender 7: (1*2 + 3*-1) / 4 = -0.25; sender 9: 4; sender 3 has no weight: 0.
    assert sender_mean(values, weights, senders).tolist() == [-0.25, -0.25, 4.0, 0.0]
