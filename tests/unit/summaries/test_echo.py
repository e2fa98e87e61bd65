"""summaries/echo.py against hand-computed values: an echo of this node's summaries earns nothing."""
import math

import pytest
import torch

from swarmnode.summaries.echo import OwnSummaries, echo_free_agreement, flat, sparse_of


def vec(*values):
    return {"w": torch.tensor(values, dtype=torch.float32)}


def test_flat_and_sparse_by_hand():
    tensors = {"a": torch.tensor([[0.0, 2.0]]), "b": torch.tensor([0.0, -1.0])}
    assert flat(tensors, ["b", "a"]).tolist() == [0.0, -1.0, 0.0, 2.0]
    index, values = sparse_of(flat(tensors, ["a", "b"]))
    assert index.tolist() == [1, 3] and values.tolist() == [2.0, -1.0]


def test_echo_free_agreement_by_hand():
    # D = (3, 4), |D| = 5; own sent s = (1, 0); G = [[1]].
    gram, own_on_d = torch.tensor([[1.0]], dtype=torch.float64), torch.tensor([3.0], dtype=torch.float64)
    # d = (2, 1): c = 2, e = (2, 0), e . D = 6 > 0: a = (10 - 6) / (sqrt 5 x 5)
    assert echo_free_agreement(10.0, math.sqrt(5), 5.0, torch.tensor([2.0], dtype=torch.float64), gram, own_on_d) \
        == pytest.approx(4 / (5 * math.sqrt(5)))
    # d = (-2, 1): e . D = -6 < 0: nothing taken out, a = (-6 + 4) / (sqrt 5 x 5)
    assert echo_free_agreement(-2.0, math.sqrt(5), 5.0, torch.tensor([-2.0], dtype=torch.float64), gram, own_on_d) \
        == pytest.approx(-2 / (5 * math.sqrt(5)))
    empty = torch.zeros(0, 0, dtype=torch.float64)
    assert echo_free_agreement(3.0, 1.0, 5.0, torch.zeros(0, dtype=torch.float64), empty,
                               torch.zeros(0, dtype=torch.float64)) == pytest.approx(0.6)
    assert echo_free_agreement(3.0, 0.0, 5.0, torch.zeros(0, dtype=torch.float64), empty,
                               torch.zeros(0, dtype=torch.float64)) == 0.0


def test_own_summaries_keep_the_last_few_and_their_gram_matrix():
    own = OwnSummaries(kept=2)
    own.add(vec(1.0, 0.0, 0.0))
    own.add(vec(1.0, 1.0, 0.0))
    own.add(vec(0.0, 0.0, 2.0))  # the first leaves
    assert len(own) == 2
    assert own.gram.tolist() == [[2.0, 0.0], [0.0, 4.0]]
    assert own.on(own.flat(vec(1.0, 2.0, 3.0))).tolist() == [3.0, 6.0]
    assert OwnSummaries().on(OwnSummaries().flat(vec(1.0))).tolist() == []  # nothing published yet


def test_a_mixed_echo_is_judged_on_what_it_adds():
    own = OwnSummaries()
    s1, s2 = vec(1.0, 0.0, 0.0, 0.0), vec(0.0, 1.0, 0.0, 0.0)
    own.add(s1)
    own.add(s2)
    direction = vec(2.0, 1.0, 1.0, 0.0)  # own deltas plus what was never sent (third coordinate)
    dn = math.sqrt(6)
    on_d = own.on(own.flat(direction))
    echo = vec(3.0, 3.0, 0.0, 1.0)  # 3 s1 + 3 s2 and an orthogonal part
    assert own.agreement(echo, math.sqrt(19), direction, dn, on_d) == pytest.approx(0.0, abs=1e-9)
    learner = vec(0.5, 0.0, 1.0, 0.0)  # agrees on the unsent coordinate: that stays
    assert own.agreement(learner, math.sqrt(1.25), direction, dn, on_d) == pytest.approx(1.0 / (math.sqrt(1.25) * dn))
