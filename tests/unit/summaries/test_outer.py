"""summaries/outer.py against hand-computed values: the merge, the outer update and the peers' weights."""
import pytest
import torch

from swarmnode.summaries import (
    frequency_corrections,
    merge_pseudo_gradients,
    outer_update,
    peer_weights,
    pseudo_gradient,
)


def test_merge_is_the_weighted_mean():
    own = {"w": torch.tensor([1.0, 2.0])}
    peers = [({"w": torch.tensor([3.0, 0.0])}, 1.0), ({"w": torch.tensor([0.0, 4.0])}, 0.5)]
    # (own + 1 * d1 + 0.5 * d2) / (1 + 1 + 0.5) = ([4, 4]) / 2.5
    assert torch.allclose(merge_pseudo_gradients(own, peers)["w"], torch.tensor([1.6, 1.6]))
    assert torch.equal(merge_pseudo_gradients(own, [])["w"], own["w"])


def test_outer_update_by_hand():
    # m' = 0.5 * 0.5 + 0.2 = 0.45; Nesterov step = 0.2 + 0.5 * 0.45 = 0.425; anchor = 1 - 0.7 * 0.425
    anchor, m = outer_update(torch.tensor([1.0]), torch.tensor([0.5]), torch.tensor([0.2]), lr=0.7, mu=0.5, nesterov=True)
    assert anchor.item() == pytest.approx(0.7025) and m.item() == pytest.approx(0.45)
    anchor, m = outer_update(torch.tensor([1.0]), torch.tensor([0.5]), torch.tensor([0.2]), lr=0.7, mu=0.5, nesterov=False)
    assert anchor.item() == pytest.approx(1 - 0.7 * 0.45)
    # lr 1, mu 0: the anchor lands where the pseudo-gradient came from
    anchor, _ = outer_update(torch.tensor([1.0]), torch.tensor([0.0]), torch.tensor([0.3]), lr=1.0, mu=0.0, nesterov=True)
    assert anchor.item() == pytest.approx(0.7)


def test_staleness_weights_on_the_receivers_clock():
    assert peer_weights([0, 1, 3], 1.0) == pytest.approx([1.0, 0.5, 0.25])
    assert peer_weights([0, 3], 0.5) == pytest.approx([1.0, 0.5])
    assert pseudo_gradient({"w": torch.tensor([1.0])}, {"w": torch.tensor([0.25])})["w"].item() == 0.75


def test_frequency_corrections_weigh_down_only_senders_merged_more_than_the_median():
    # median of (8, 4, 2) = 4: fast 4/8, mid 4/4, slow min(1, 4/2) = 1, a sender never merged 1
    assert frequency_corrections({"fast": 8, "mid": 4, "slow": 2}, ["fast", "mid", "slow", "new"]) == pytest.approx(
        [0.5, 1.0, 1.0, 1.0])
    assert frequency_corrections({"a": 6, "b": 2}, ["a", "b"]) == pytest.approx([4 / 6, 1.0])  # median 4
    assert frequency_corrections({}, ["a"]) == [1.0]
    # w_j = (1 + tau_j)^-a * c_j
    assert peer_weights([0, 1], 1.0, [0.5, 1.0]) == pytest.approx([0.5, 0.5])
