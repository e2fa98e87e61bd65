"""The RL objective a node trains its policy with: GRPO-style group advantages and the
decoupled PPO loss of AReaL (arXiv 2505.24298) for rollouts made by a possibly stale policy.

Three policies appear in the loss, each as per-token log-probs of the sampled completion:

    behavior_logp  log pi_behav(y_t)  from the generator that sampled the rollout (version v)
    proximal_logp  log pi_prox(y_t)   the trainer's policy right before this update, no grad
    logp           log pi_theta(y_t)  the policy being updated, with grad

Every function here is pure: tensors in, tensors out, no state and no I/O.
"""
from __future__ import annotations

import torch
from torch import Tensor


def group_advantages(
    rewards: Tensor,
    group_ids: Tensor | None = None,
    *,
    scale_by_std: bool = True,
    eps: float = 1e-6,
) -> Tensor:
    """Group-relative advantages: each completion is scored against the others for its prompt.

        A_i = (r_i - mean_g) / (std_g + eps)    (GRPO; std_g is the population std, ddof 0)
        A_i =  r_i - mean_g                      (Dr. GRPO, scale_by_std=False)

    where g is the group of sample i. `rewards` is either [N] with `group_ids` [N] (any
    integers, groups need not be contiguous nor of equal size) or [G, K] with `group_ids`
    None (one group per row). Returns a float tensor shaped like `rewards`.
    A group whose rewards are all equal gets advantage 0 everywhere.
    """
    rewards = rewards if rewards.is_floating_point() else rewards.float()
    if group_ids is None:
        if rewards.dim() != 2:
            raise ValueError(f"rewards without group_ids must be [G, K], got {tuple(rewards.shape)}")
        mean = rewards.mean(dim=-1, keepdim=True)
        std = rewards.std(dim=-1, unbiased=False, keepdim=True)
    else:
        if rewards.dim() != 1 or group_ids.shape != rewards.shape:
            raise ValueError(
                f"rewards and group_ids must both be [N], got {tuple(rewards.shape)} and {tuple(group_ids.shape)}"
            )
        _, group_of = torch.unique(group_ids, return_inverse=True)  # group_of[i] in 0..G-1
        num_groups = int(group_of.max()) + 1 if group_of.numel() else 0
        count = torch.zeros(num_groups, dtype=rewards.dtype, device=rewards.device)
        count = count.index_add(0, group_of, torch.ones_like(rewards))
        total = torch.zeros_like(count).index_add(0, group_of, rewards)
        mean = (total / count)[group_of]
        squared_error = torch.zeros_like(count).index_add(0, group_of, (rewards - mean) ** 2)
        std = (squared_error / count).sqrt()[group_of]
    centered = rewards - mean
    return centered / (std + eps) if scale_by_std else centered


def nonzero_advantage_groups(rewards: Tensor, group_ids: Tensor) -> Tensor:
    """Bool mask [N]: True for samples whose group has any reward variation.

        keep_i = max_{j in g(i)} r_j != min_{j in g(i)} r_j

    A group where every completion got the same reward has all advantages 0, so it carries
    no policy gradient and is dropped from the batch (DAPO's dynamic sampling filter).
    """
    if rewards.dim() != 1 or group_ids.shape != rewards.shape:
        raise ValueError(
            f"rewards and group_ids must both be [N], got {tuple(rewards.shape)} and {tuple(group_ids.shape)}"
        )
    _, group_of = torch.unique(group_ids, return_inverse=True)
    num_groups = int(group_of.max()) + 1 if group_of.numel() else 0
    group_max = rewards.new_full((num_groups,), float("-inf")).scatter_reduce(0, group_of, rewards, "amax")
    group_min = rewards.new_full((num_groups,), float("inf")).scatter_reduce(0, group_of, rewards, "amin")
    return (group_max != group_min)[group_of]


def k3_kl(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """Per-token k3 estimator of KL(pi || pi_ref) for tokens sampled from pi (Schulman, 2020).

        k3 = exp(ref_logp - logp) - (ref_logp - logp) - 1

    Unbiased, and >= 0 token by token (since e^x >= 1 + x), 0 where the two agree.
    """
    log_ratio = ref_logp - logp
    return torch.exp(log_ratio) - log_ratio - 1


def decoupled_ppo_loss(
    logp: Tensor, proximal_logp: Tensor, behavior_logp: Tensor, advantages: Tensor, mask: Tensor, *,
    eps_low: float = 0.2, eps_high: float = 0.28, behavior_weight_cap: float | None = None,
    ref_logp: Tensor | None = None, kl_coef: float = 0.0, shaped_rows: Tensor | None = None,
    shaping_gamma: float = 0.1,
) -> tuple[Tensor, dict[str, float]]:
    """Decoupled PPO loss (AReaL) with asymmetric clipping and a token-level mean (DAPO).

        ratio_t = exp(logp_t - proximal_logp_t)                     trust region around pi_prox
        w_t     = exp(proximal_logp_t - behavior_logp_t)            off-policy correction, detached,
                  (0 when it exceeds behavior_weight_cap: as in AReaL, such tokens are
                  too far off-policy to correct and are dropped from the objective)
        J_t     = w_t * min(ratio_t * A, clip(ratio_t, 1 - eps_low, 1 + eps_high) * A)
        loss    = -sum_{b,t} mask * J_t / sum_{b,t} mask
                  + kl_coef * sum_{b,t} mask * k3_kl(logp, ref_logp) / sum_{b,t} mask

    On `shaped_rows` (bool [B]: text another model sampled, whose behaviour probabilities are
    unknown) J_t is instead shaped_objective(logp_t, A, shaping_gamma), unclipped.

    Shapes: logp, proximal_logp, behavior_logp, mask are [B, T] (mask is 1 on completion
    tokens); advantages are [B] (one per sequence, broadcast over its tokens) or [B, T].
    Only `logp` carries gradient; the other inputs are treated as data. Values at masked-out
    positions are ignored, even if they are inf or nan.

    Returns (loss, stats) where stats are floats over the masked tokens:
        clip_fraction          share of tokens whose clipped term is the smaller one (no gradient)
        mean_ratio             mean of ratio_t
        mean_behavior_weight   mean of w_t (after the cap drops tokens)
        approx_kl              mean k3 estimate of KL(pi_prox || pi_theta)
        kl_to_ref              mean k3_kl(logp, ref_logp), only when ref_logp is given
    """
    mask = mask.bool()
    weights = mask.to(logp.dtype)
    logp, proximal_logp, behavior_logp, advantages = masked_inputs(logp, proximal_logp, behavior_logp, advantages, mask)
    ratio = torch.exp(logp - proximal_logp)
    behavior_weight = behavior_weights(proximal_logp, behavior_logp, behavior_weight_cap)
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1.0 - eps_low, 1.0 + eps_high) * advantages
    objective = behavior_weight * torch.minimum(unclipped, clipped)
    if shaped_rows is not None and bool(shaped_rows.any()):
        shaped = shaped_objective(logp, advantages, shaping_gamma)
        objective = torch.where(shaped_rows[:, None] & mask, shaped, objective)
    loss = -masked_mean(objective, weights)
    stats = ppo_stats(logp, proximal_logp, ratio, behavior_weight, unclipped, clipped, weights)
    if ref_logp is not None:
        kl_to_ref = masked_mean(k3_kl(logp, torch.where(mask, ref_logp.detach(), 0.0)), weights)
        loss = loss + kl_coef * kl_to_ref
        stats["kl_to_ref"] = kl_to_ref.item()
    return loss, stats


def masked_mean(x: Tensor, weights: Tensor) -> Tensor:
    """The token-level mean over the mask (weights: the mask as 0/1 floats):

        sum_{b,t} weights * x / max(1, sum_{b,t} weights)
    """
    return (x * weights).sum() / weights.sum().clamp(min=1.0)


def masked_inputs(logp: Tensor, proximal_logp: Tensor, behavior_logp: Tensor, advantages: Tensor,
                  mask: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The loss's inputs with every log-prob outside the (bool) mask zeroed, so padding can never
    produce inf/nan (not even in the gradient); all but `logp` detached; advantages [B]
    broadcast over tokens as [B, 1]."""
    logp = torch.where(mask, logp, 0.0)
    proximal_logp = torch.where(mask, proximal_logp.detach(), 0.0)
    behavior_logp = torch.where(mask, behavior_logp.detach(), 0.0)
    advantages = advantages.detach().to(logp.dtype)
    if advantages.dim() == logp.dim() - 1:
        advantages = advantages.unsqueeze(-1)
    return logp, proximal_logp, behavior_logp, advantages


def behavior_weights(proximal_logp: Tensor, behavior_logp: Tensor, cap: float | None) -> Tensor:
    """The off-policy correction, 0 where it exceeds `cap` (None: no cap):

        w_t = exp(proximal_logp_t - behavior_logp_t)   if w_t <= cap else 0
    """
    weight = torch.exp(proximal_logp - behavior_logp)
    return weight if cap is None else torch.where(weight <= cap, weight, 0.0)


def ppo_stats(logp: Tensor, proximal_logp: Tensor, ratio: Tensor, behavior_weight: Tensor, unclipped: Tensor,
              clipped: Tensor, weights: Tensor) -> dict[str, float]:
    """decoupled_ppo_loss's stats over the masked tokens (see there), without gradient."""
    with torch.no_grad():
        return {
            "clip_fraction": masked_mean((clipped < unclipped).to(logp.dtype), weights).item(),
            "mean_ratio": masked_mean(ratio, weights).item(),
            "mean_behavior_weight": masked_mean(behavior_weight, weights).item(),
            # tokens seen as samples of pi_prox: k3 = (ratio - 1) - log(ratio)
            "approx_kl": masked_mean(k3_kl(proximal_logp, logp), weights).item(),
        }


def shaped_objective(logp: Tensor, advantages: Tensor, gamma: float) -> Tensor:
    """LUFFY's shaped importance weight (arXiv 2504.14945) for text this policy did not sample:

        J_t = f(p_t) * A,   f(p) = p / (p + gamma),   p_t = exp(logp_t)

    Its gradient is A * gamma p / (p + gamma)^2 * grad log p: per token at most A / 4 (at
    p = gamma), and small both where the policy already agrees (p -> 1: ~gamma) and where the
    text is far from anything it would say (p -> 0). Another model's sample thus never weighs
    more than a quarter of one this node drew itself, whatever its tokens. [B, T] -> [B, T].
    """
    p = torch.exp(logp)
    return p / (p + gamma) * advantages


def staleness_mask(behavior_versions: Tensor, current_version: int, max_staleness: int) -> Tensor:
    """Bool mask: which rollouts a trainer at policy version n may still learn from.

        keep = (v <= n) and (n - v <= max_staleness)

    v is the policy version that generated each rollout. AReaL bounds this staleness (its eta)
    so the off-policy correction stays small; a version from the future is never kept.
    """
    if max_staleness < 0:
        raise ValueError(f"max_staleness must be >= 0, got {max_staleness}")
    versions = torch.as_tensor(behavior_versions)
    lag = current_version - versions
    return (lag >= 0) & (lag <= max_staleness)


def staleness_weight(tau: Tensor | float, a: float) -> Tensor | float:
    """Down-weighting for a peer contribution that is tau versions old:  (1 + tau) ** (-a).

    1 for a fresh contribution (tau = 0), decaying polynomially with age; a = 0 weights all
    equally. Takes a float or a tensor of staleness values (tau >= 0), returns the same kind.
    """
    if a < 0:
        raise ValueError(f"a must be >= 0, got {a}")
    too_old = bool((tau < 0).any()) if isinstance(tau, Tensor) else tau < 0
    if too_old:
        raise ValueError(f"staleness tau must be >= 0, got {tau}")
    return (1 + tau) ** (-a)


def token_logprobs(logits: Tensor, tokens: Tensor) -> Tensor:
    """Log-probability of each token under its logits, computed in float32.

        logp[b, t] = logits[b, t, tokens[b, t]] - logsumexp_v logits[b, t, v]

    logits [B, T, V] must already be aligned with tokens [B, T] (for a causal LM, the logits
    at position t-1 score the token at position t: shift before calling). Returns [B, T].
    """
    logits = logits.float()
    picked = logits.gather(-1, tokens.long().unsqueeze(-1)).squeeze(-1)
    return picked - torch.logsumexp(logits, dim=-1)


def external_sample_mask(advantages: Tensor, external: Tensor) -> Tensor:
    """keep_i = 0 if sample i came from a peer and A_i < 0, else 1 (float [B]).

    Pushing down the probability of text the policy did not sample itself moves mass to
    arbitrary places; on a weak policy most of a peer's samples are failures, so that push
    dominates: with every external sample kept, sharing lowered the nodes' own reward
    (docs/swarm-learning.md, docs/experiments/sapo-sim.md).
    """
    return (~(external & (advantages < 0))).to(advantages.dtype)


def mean_logprob_gap(logp: Tensor, behavior_logp: Tensor, mask: Tensor) -> Tensor:
    """Per sample, how much likelier this policy finds it than its sampler said, in nats per token:

        gap_b = sum_t mask_bt * (logp_bt - behavior_logp_bt) / max(1, sum_t mask_bt)

    exp(gap) is the geometric mean of the behaviour weights w_t = exp(logp_t - behavior_t).
    A peer of the same base model samples from a policy close to this one, so |gap| stays
    small; a peer that understates its log-probs to inflate the weight of its samples (to the
    cap on every token: gap = log cap) stands out. Shapes [B, T] -> [B].
    """
    weights = mask.to(logp.dtype)
    diff = torch.where(mask.bool(), logp - behavior_logp, 0.0)
    return (diff * weights).sum(-1) / weights.sum(-1).clamp(min=1.0)


def sender_mean(values: Tensor, weights: Tensor, sender_ids: Tensor) -> Tensor:
    """Each row's sender-wide weighted mean: for row b of sender s = sender_ids[b],

        M_b = sum_{c: s_c = s} weights_c * values_c / sum_{c: s_c = s} weights_c   (0 if no weight)

    Used on `mean_logprob_gap` with the rows' token counts as weights: samples drawn from the
    sender's own policy have E[gap] = -KL(sender || this policy) <= 0, so honest senders sit at
    or below 0 once their samples are pooled, while one sample alone can stray far either way;
    a sender understating its log-probs by c nats per token sits near +c. Shapes [B] -> [B].
    """
    _, sender_of = torch.unique(sender_ids, return_inverse=True)
    count = int(sender_of.max()) + 1 if sender_of.numel() else 0
    weights = weights.to(values.dtype)
    total = torch.zeros(count, dtype=values.dtype, device=values.device).index_add(0, sender_of, weights * values)
    mass = torch.zeros(count, dtype=values.dtype, device=values.device).index_add(0, sender_of, weights)
    return torch.where(mass > 0, total / mass.clamp(min=1e-12), 0.0)[sender_of]


def truncate_behavior_logp(behavior_logp: Tensor, proximal_logp: Tensor, rows: Tensor) -> Tensor:
    """Behaviour log-probs whose off-policy weight is at most 1 on `rows` (bool [B]):

        behavior'_bt = max(behavior_bt, proximal_bt)  on rows,   behavior_bt elsewhere
        => w'_bt = exp(proximal_bt - behavior'_bt) = min(1, w_bt)

    Truncated importance weights (as V-trace's rho-bar = 1): a peer's sample can be
    down-weighted where this policy finds it unlikely, but never counts more than a sample
    this node drew itself, whatever log-probs its sender claims.
    """
    return torch.where(rows[:, None], torch.maximum(behavior_logp, proximal_logp), behavior_logp)
