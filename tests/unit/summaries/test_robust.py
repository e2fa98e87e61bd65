"""summaries/robust.py against hand-computed values: the clipped, trust-weighted merge."""
import math

import pytest
import torch
from hypothesis import given, settings, strategies as st

from swarmnode.summaries.robust import CLIP_RATIO, clip_factor, cosine, dot, robust_merge


def vec(*values):
    return {"x": torch.tensor(values, dtype=torch.float32)}


def test_dot_and_cosine_by_hand():
    assert dot(vec(3, 4), vec(4, -3)) == 0.0
    assert cosine(vec(3, 4), vec(6, 8)) == pytest.approx(1.0)
    assert cosine(vec(1, 0), vec(1, 1)) == pytest.approx(1 / math.sqrt(2))
    assert cosine(vec(1, 0), vec(-2, 0)) == pytest.approx(-1.0)
    assert cosine(vec(0, 0), vec(1, 1)) == 0.0  # no evidence either way
    two = {"a": torch.tensor([1.0, 0.0]), "b": torch.tensor([[2.0]])}
    assert dot(two, two) == 5.0  # across tensors


def test_clip_factor():
    assert clip_factor(5.0, 1.0) == 0.2
    assert clip_factor(0.5, 1.0) == 1.0
    assert clip_factor(1.0, 1.0) == 1.0


def test_a_sign_flipped_peer_is_clipped_to_this_nodes_norm():
    # own (1, 0); the peer sends -4 x (1, 0), w = 1, tau = 1 x |own| = 1: clipped to (-1, 0).
    # Trusted: g = ((1, 0) + (-1, 0)) / 2 = (0, 0): it can cancel this node's step, not reverse it.
    # (The plain mean: ((1, 0) + (-4, 0)) / 2 = (-1.5, 0), a step backwards.)
    g, factors = robust_merge(vec(1, 0), [(vec(-4, 0), 1.0, 1.0)], clip_ratio=1.0)
    assert torch.allclose(g["x"], torch.tensor([0.0, 0.0])) and factors == [pytest.approx(0.25)]
    # Untrusted (t = 0): its place abstains, g = (1, 0) / 2.
    g, _ = robust_merge(vec(1, 0), [(vec(-4, 0), 1.0, 0.0)], clip_ratio=1.0)
    assert torch.allclose(g["x"], torch.tensor([0.5, 0.0]))


def test_trusted_and_unclipped_it_is_the_weighted_mean():
    # own (1, 0), d = (0.6, 0.8), |d| = 1 <= tau: g = ((1, 0) + (0.6, 0.8)) / 2 = (0.8, 0.4).
    g, factors = robust_merge(vec(1, 0), [(vec(0.6, 0.8), 1.0, 1.0)], clip_ratio=1.0)
    assert torch.allclose(g["x"], torch.tensor([0.8, 0.4])) and factors == [1.0]


def test_two_peers_with_weights_and_trust_by_hand():
    # own (2, 0), tau 2; d1 (0, 2), w 1, t 1: not clipped; d2 (-10, 0), w 0.5, t 0.5: clipped
    # by 2/10 to (-2, 0). g = ((2, 0) + (0, 2) + 0.25 x (-2, 0)) / (1 + 1 + 0.5) = (0.6, 0.8).
    g, factors = robust_merge(vec(2, 0), [(vec(0, 2), 1.0, 1.0), (vec(-10, 0), 0.5, 0.5)], clip_ratio=1.0)
    assert torch.allclose(g["x"], torch.tensor([0.6, 0.8])) and factors == [1.0, pytest.approx(0.2)]


vectors = st.lists(st.floats(-1e3, 1e3, allow_nan=False, width=32), min_size=3, max_size=3)


@settings(max_examples=200, deadline=None)
@given(own=vectors, peers=st.lists(st.tuples(vectors, st.floats(0, 1), st.floats(0, 1)), min_size=1, max_size=4))
def test_no_peer_moves_the_step_further_than_this_nodes_own_norm(own, peers):
    own_t = vec(*own)
    own_norm = math.sqrt(dot(own_t, own_t))
    tau = CLIP_RATIO * own_norm
    total_w = sum(w for _, w, _ in peers)
    g, _ = robust_merge(own_t, [(vec(*d), w, t) for d, w, t in peers])
    for j, (d, w, t) in enumerate(peers):  # without peer j's term (its place abstaining), g moves by <= w t tau / (1 + sum w)
        rest = [(vec(*dd), ww, tt if i != j else 0.0) for i, (dd, ww, tt) in enumerate(peers)]
        without, _ = robust_merge(own_t, rest)
        moved = math.sqrt(dot({"x": g["x"] - without["x"]}, {"x": g["x"] - without["x"]}))
        assert moved <= w * t * tau / (1 + total_w) * (1 + 1e-4) + 1e-3
        assert moved <= own_norm * (1 + 1e-4) + 1e-3
