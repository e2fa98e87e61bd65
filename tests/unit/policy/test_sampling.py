"""policy/sampling.py against hand-computed values: top-p and one sampled token per row."""
import math

import torch

from swarmnode.policy.sampling import sample_next, top_p_filter


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
