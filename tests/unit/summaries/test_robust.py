"""summaries/robust.py and summaries/trust.py against hand-computed values, and the outer step
that uses them: one dishonest peer cannot turn this node's step around."""
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from swarmnode.summaries import CompressionConfig, OuterConfig, OuterLoop, Received
from swarmnode.summaries.robust import CLIP_RATIO, clip_factor, cosine, dot, robust_merge
from swarmnode.summaries.trust import (
    LOW_TRUST,
    REPEATED,
    TrustBook,
    agreement_scale,
    harmful,
    relative_agreement,
    score_of,
    trust_of,
    updated_score,
)


def vec(*values):
    return {"x": torch.tensor(values, dtype=torch.float32)}


# -- robust.py -------------------------------------------------------------------------------------


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


# -- trust.py ---------------------------------------------------------------------------------------


def test_relative_agreement_by_hand():
    assert relative_agreement(0.03, 0.06) == pytest.approx(0.5)
    assert relative_agreement(-0.09, 0.06) == -1.0  # -1.5, clamped
    assert relative_agreement(0.03, 0.01) == 1.0


def test_agreement_scale_is_the_median_above_the_noise_floor():
    assert agreement_scale([0.01, 0.05, 0.03], 10**6) == pytest.approx(0.03)
    assert agreement_scale([0.01, 0.05, 0.03, 0.04], 10**6) == pytest.approx(0.035)
    assert agreement_scale([], 10**6) == pytest.approx(0.003)  # 3 / sqrt(1e6)
    assert agreement_scale([0.0001] * 3, 10**6) == pytest.approx(0.003)
    assert agreement_scale([0.03], 100) == pytest.approx(0.3)


def test_score_rises_slowly_and_falls_fast():
    assert updated_score(0.1, 0.5) == pytest.approx(0.2)  # 0.1 + 0.25 x 0.4
    assert updated_score(0.6, -0.6) == pytest.approx(0.0)  # 0.6 + 0.5 x -1.2
    assert updated_score(0.3, 0.3) == pytest.approx(0.3)


def test_trust_of_score():
    assert trust_of(0.15) == pytest.approx(0.5) and trust_of(0.3) == 1.0 and trust_of(0.7) == 1.0
    assert trust_of(-0.1) == 0.0
    assert score_of(0.2) == pytest.approx(0.06) and trust_of(score_of(0.2)) == pytest.approx(0.2)


def book():
    b = TrustBook(16, initial=0.2, skip_below=0.15, parameters=10**6)
    b.restore_votes({f"other{i}": 0.06 for i in range(31)})  # the scale stays 0.06 for the next judgements
    return b


def test_an_honest_newcomer_earns_trust():
    b = book()
    assert b.trust("new") == pytest.approx(0.2)
    v = b.judge("p", 0.03, b"1")  # r 0.5: score 0.06 -> 0.06 + 0.25 x 0.44 = 0.17, trust 0.567
    assert (v.evidence, v.trust, v.skipped, v.harmful) == (pytest.approx(0.5), pytest.approx(0.17 / 0.3), None, False)
    v = b.judge("p", 0.03, b"2")  # s_k = 0.5 - 0.44 x 0.75^k: 0.2525, trust 0.842
    assert v.trust == pytest.approx((0.5 - 0.44 * 0.75 ** 2) / 0.3)
    assert b.judge("p", 0.03, b"3").trust == 1.0  # 0.314


def test_harmful_needs_steady_evidence():
    assert not harmful([-1.0] * 5)  # fewer than STRIKE_MIN (6)
    assert harmful([-1.0] * 5 + [1.0])  # mean -0.67
    assert not harmful([1.0, -1.0] * 4)  # an honest peer's noisy signs: mean 0
    assert not harmful([-1.0, -1.0, -1.0, 1.0, -1.0, 1.0])  # mean -0.33: not under -0.5
    assert not harmful([-0.5] * 6)  # not under -0.5


def test_a_sign_flipper_is_skipped_at_once_and_struck_from_its_sixth_summary():
    b = book()
    v = b.judge("bad", -0.03, b"1")  # r -0.5... then -1: its own |a| sets its vote, the median stays 0.06
    assert (v.trust, v.skipped, v.harmful) == (0.0, LOW_TRUST, False)
    verdicts = [b.judge("bad", -0.06, bytes([i])) for i in range(2, 8)]
    assert [v.harmful for v in verdicts] == [False, False, False, False, True, True]  # mean r under -0.5 from 6 on
    snap = b.snapshot()["bad"]
    assert (snap["judged"], snap["merged"], snap["skipped"], snap["harmful"]) == (7, 0, 7, 2)


def test_a_random_direction_never_earns_weight():
    b = book()
    for i in range(6):
        v = b.judge("rnd", 0.0005, bytes([i]))  # r ~ 0.008: the score sinks from 0.06 towards it (trust ~ 0.03)
    assert v.skipped == LOW_TRUST and not v.harmful


def test_a_turncoat_loses_its_trust_with_its_first_flipped_summary():
    b = book()
    for i in range(12):
        b.judge("turn", 0.06, bytes([i]))  # r = 1
    assert b.trust("turn") == 1.0
    v = b.judge("turn", -0.06, b"flip")  # s ~ 0.97 -> 0.97 + 0.5 (-1.97) ~ -0.015
    assert v.trust == 0.0 and v.skipped == LOW_TRUST


def test_a_repeated_summary_is_skipped_and_struck():
    b = book()
    assert b.judge("rep", 0.03, b"same").skipped is None
    v = b.judge("rep", 0.03, b"same")
    assert (v.evidence, v.skipped, v.harmful) == (-1.0, REPEATED, True)
    assert b.judge("x", 0.03, None).skipped is None and b.judge("x", 0.03, None).skipped is None  # no digest: no check


def test_distrusted_peers_are_evicted_last_and_trust_round_trips():
    b = TrustBook(2, initial=0.2, skip_below=0.15, parameters=10**6)
    b.restore_votes({f"other{i}": 0.06 for i in range(31)})
    for i in range(3):
        b.judge("bad", -0.06, bytes([i]))  # score under 0: distrusted
    b.judge("p2", 0.03, b"a")
    b.judge("p3", 0.03, b"a")  # over capacity: p2 goes, not the distrusted "bad"
    assert set(b.snapshot()) == {"bad", "p3"}
    saved = b.saved(["bad", "p3", "unknown"])
    assert [p for p, _, _ in saved] == ["bad", "p3"] and saved[0][1] < 0 and saved[0][2] == 3
    other = TrustBook(8, initial=0.2, skip_below=0.15, parameters=10**6)
    for peer, score, judged in saved:
        other.restore(peer, score, judged)
    assert other.trust("bad") == 0.0 and other.snapshot()["bad"]["judged"] == 3
    other.restore("wild", 55.0, -3)  # a corrupt row is clamped
    assert other.snapshot()["wild"]["score"] == 1.0 and other.snapshot()["wild"]["judged"] == 0


# -- the outer step ---------------------------------------------------------------------------------


def _loop(robust=True, partners=2):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 2))
    config = OuterConfig(every_steps=1, outer_lr=1.0, outer_momentum=0.0, partners_per_step=partners,
                         compression=CompressionConfig(0.5, 8, 64), robust=robust)
    return model, OuterLoop(model, config)


def _train(model, direction, scale):
    """Move the weights by -scale x direction: the own pseudo-gradient is scale x direction."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.sub_(scale * direction[name])


def test_the_outer_step_skips_a_sign_flipped_peer_and_still_steps_forward():
    model, loop = _loop()
    direction = {n: torch.randn(s) for n, s in loop.shapes.items()}
    anchor = {n: t.clone() for n, t in loop.anchor.items()}
    _train(model, direction, 0.1)
    loop.step(publish=True)  # alone: the anchor follows; this node's summary is its a_self reference
    _train(model, direction, 0.1)
    flipped = {n: -8 * 0.1 * d for n, d in direction.items()}
    loop.inbox.put(Received("bad", flipped, 0.0, loop.clock(), 0.0, b"1"))
    result = loop.step(publish=True)
    assert [v.peer for v in result.verdicts] == ["bad"] and result.partners == []
    assert result.verdicts[0].agreement == pytest.approx(-1.0, abs=1e-4) and result.verdicts[0].skipped == LOW_TRUST
    moved = {n: anchor[n] - loop.anchor[n] for n in anchor}
    assert cosine(moved, direction) == pytest.approx(1.0, abs=1e-4)  # two own steps, nothing else


def test_a_newcomer_is_merged_at_its_trust_and_clipped_to_own_norm():
    model, loop = _loop()
    direction = {n: torch.randn(s) for n, s in loop.shapes.items()}
    _train(model, direction, 0.1)
    loop.step(publish=True)
    before = {n: t.clone() for n, t in loop.anchor.items()}
    _train(model, direction, 0.1)
    own = {n: 0.1 * d for n, d in direction.items()}
    honest = {n: 0.1 * d + 0.3 * torch.randn(d.shape) for n, d in direction.items()}  # far off own: clipped
    loop.inbox.put(Received("new", honest, 0.0, loop.clock(), 0.0, b"1"))
    result = loop.step(publish=True)
    v = result.verdicts[0]
    assert result.partners == ["new"] and v.skipped is None and 0 < v.trust < 1
    assert result.weights == [1.0] and 0 < result.clip_factors[0] < 1
    # g = (own + w t f d) / (1 + w), w = 1 (fresh, first merge)
    t, f = v.trust, result.clip_factors[0]
    expected = {n: before[n] - (own[n] + t * f * honest[n]) / 2 for n in before}
    for n in before:
        assert torch.allclose(loop.anchor[n], expected[n], atol=1e-5)


def test_the_plain_mean_is_what_a_flipped_peer_steers():
    model, loop = _loop(robust=False)
    direction = {n: torch.randn(s) for n, s in loop.shapes.items()}
    anchor = {n: t.clone() for n, t in loop.anchor.items()}
    _train(model, direction, 0.1)
    loop.inbox.put(Received("bad", {n: -8 * 0.1 * d for n, d in direction.items()}, 0.0, loop.clock(), 0.0, b"1"))
    result = loop.step(publish=True)
    assert result.partners == ["bad"]  # judged (status shows it) but merged: g = (own - 8 own) / 2
    moved = {n: anchor[n] - loop.anchor[n] for n in anchor}
    assert cosine(moved, direction) == pytest.approx(-1.0, abs=1e-4)


def test_peers_are_judged_against_the_decaying_sum_of_own_deltas():
    # D_t = DIRECTION_DECAY D_{t-1} + own_t: after own (1 along u), then own (1 along v),
    # D = 0.8 u + v. A peer sending exactly u agrees with cos(u, 0.8 u + v) = 0.8 / sqrt(1.64).
    from swarmnode.summaries.state import DIRECTION_DECAY

    model, loop = _loop()
    u = {n: torch.zeros(s) for n, s in loop.shapes.items()}
    v = {n: torch.zeros(s) for n, s in loop.shapes.items()}
    first, second = list(loop.shapes)[:2]
    u[first].view(-1)[0], v[second].view(-1)[0] = 1.0, 1.0
    _train(model, u, 1.0)
    loop.step(publish=True)
    _train(model, v, 1.0)
    loop.inbox.put(Received("peer", u, 0.0, loop.clock(), 0.0, b"1"))
    result = loop.step(publish=True)
    assert DIRECTION_DECAY == 0.8
    assert result.verdicts[0].agreement == pytest.approx(0.8 / math.sqrt(1.64), abs=1e-5)
    state = loop.state_tensors()  # checkpointed with the outer loop, and restored
    other = _loop()[1]
    other.load(state, loop.state_meta())
    assert torch.equal(other.direction[first], loop.direction[first])
    del state[f"direction.{first}"]  # a checkpoint of an older release: no direction, zeros
    _loop()[1].load({k: t for k, t in state.items() if not k.startswith("direction.")}, {})


def test_one_peer_has_one_vote_in_the_agreement_scale_and_scoring_alone_acts_on_nothing():
    b = book()
    for i in range(20):  # an echo of this node's own summary, again and again
        b.judge("echo", 0.9, bytes([i]))
    assert b.scale == pytest.approx(0.06)  # one vote of 32: the median stays
    quiet = TrustBook(16, initial=0.2, skip_below=0.15, parameters=10**6, acting=False)
    verdicts = [quiet.judge("bad", -0.5, b"x") for _ in range(6)]  # repeated and disagreeing
    assert all(v.skipped is None and not v.harmful for v in verdicts) and quiet.merges("bad")
    assert quiet.snapshot()["bad"]["skipped"] == 0 and quiet.trust("bad") == 0.0
