"""summaries/trust.py against hand-computed values: how a peer earns and loses trust."""
import pytest

from swarmnode.summaries.trust import (
    LOW_TRUST,
    REPEATED,
    VETOED,
    TrustBook,
    agreement_scale,
    capped_score,
    harmful,
    relative_agreement,
    score_of,
    trust_of,
    updated_score,
)


def test_relative_agreement_by_hand():
    assert relative_agreement(0.03, 0.06) == pytest.approx(0.5)
    assert relative_agreement(-0.09, 0.06) == -1.0  # -1.5, clamped
    assert relative_agreement(0.03, 0.01) == 1.0


def test_agreement_scale_is_the_upper_quartile_above_the_noise_floor():
    assert agreement_scale([0.01, 0.05, 0.03], 10**6) == pytest.approx(0.05)  # ceil(2.25) = 3rd of 3
    assert agreement_scale([0.01, 0.05, 0.03, 0.04], 10**6) == pytest.approx(0.04)  # 3rd of 4
    assert agreement_scale([0.02], 10**6) == pytest.approx(0.02)
    assert agreement_scale([], 10**6) == pytest.approx(0.003)  # 3 / sqrt(1e6)
    assert agreement_scale([0.0001] * 3, 10**6) == pytest.approx(0.003)
    assert agreement_scale([0.03], 100) == pytest.approx(0.3)


def test_a_majority_of_directionless_voters_does_not_shrink_the_scale():
    # 5 peers whose summaries carry no direction (|a| ~ 0.001) and 4 honest ones (~0.02): the
    # median would be 0.001, making every honest r +-1 by its sign; the quartile is the 7th of 9.
    votes = [0.001, 0.0008, 0.0012, 0.0009, 0.001, 0.018, 0.02, 0.022, 0.025]
    assert agreement_scale(votes, 10**6) == pytest.approx(0.02)
    assert relative_agreement(-0.005, agreement_scale(votes, 10**6)) == pytest.approx(-0.25)


def test_negative_evidence_caps_the_score_at_once():
    assert capped_score(0.9, 0.4) == 0.9  # r >= 0: no cap
    assert capped_score(0.9, -0.25) == pytest.approx(0.15)  # trust <= 1 - 0.25 / 0.5 = 0.5: score 0.5 x 0.3
    assert capped_score(0.9, -0.5) == 0.0 and capped_score(0.9, -1.0) == 0.0
    assert capped_score(-0.2, -0.1) == -0.2  # already lower: kept


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
    assert harmful([-1.0] * 6)  # mean -1, stdev 0
    # mean -0.667, stdev sqrt(3.333 / 5) = 0.816, 3 standard errors 3 x 0.816 / sqrt(6) = 1.0: not steady
    assert not harmful([-1.0] * 5 + [1.0])
    # mean -0.833, stdev sqrt(3.667 / 11) = 0.577, 3 standard errors 0.5: steady
    assert harmful([-1.0] * 11 + [1.0])
    assert not harmful([1.0, -1.0] * 4)  # an honest peer's noisy signs: mean 0
    assert not harmful([-1.0, -1.0, -1.0, 1.0, -1.0, 1.0])  # mean -0.33: not under -0.5
    assert not harmful([-0.5] * 6)  # not under -0.5


def test_a_sign_flipper_is_skipped_at_once_and_struck_from_its_sixth_summary():
    b = book()
    v = b.judge("bad", -0.03, b"1")  # r -0.5... then -1: its own |a| sets its vote, the quartile stays 0.06
    assert (v.trust, v.skipped, v.harmful) == (0.0, VETOED, False)
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
    v = b.judge("turn", -0.06, b"flip")  # r = -1: vetoed, whatever its trust was
    assert v.trust == 0.0 and v.skipped == VETOED


def test_a_trusted_peers_weakly_negative_summary_goes_in_at_a_capped_weight_and_the_next_is_skipped():
    b = book()
    for i in range(12):
        b.judge("turn", 0.06, bytes([i]))  # r = 1: score ~ 0.97
    v = b.judge("turn", -0.012, b"f1")  # r -0.2: score min(0.97 + 0.5 (-1.17), 0.6 x 0.3) = 0.18, trust 0.6
    assert (v.evidence, v.skipped, v.trust) == (pytest.approx(-0.2), None, pytest.approx(0.6))
    v = b.judge("turn", -0.012, b"f2")  # 0.18 + 0.5 (-0.38) = -0.01: trust 0
    assert (v.skipped, v.trust) == (LOW_TRUST, 0.0)


def test_an_honest_peers_occasional_veto_is_forgiven_within_two_agreeing_summaries():
    b = book()
    score = score_of(0.2)
    for i in range(6):
        b.judge("honest", 0.03, bytes([i]))  # r 0.5
        score = updated_score(score, 0.5)
    assert b.judge("honest", -0.04, b"bad luck").skipped == VETOED  # r -0.67
    score = updated_score(score, -2 / 3)  # ~0.39 -> ~-0.14
    assert b.trust("honest") == 0.0 and b.snapshot()["honest"]["score"] == pytest.approx(score, abs=1e-3)
    assert b.judge("honest", 0.03, b"next").skipped == LOW_TRUST  # ~0.02: trust ~0.07
    v = b.judge("honest", 0.03, b"next2")  # ~0.14: trust ~0.47, merged
    assert v.skipped is None and v.trust == pytest.approx(updated_score(updated_score(score, 0.5), 0.5) / 0.3)


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


def test_one_peer_has_one_vote_in_the_agreement_scale_and_scoring_alone_acts_on_nothing():
    b = book()
    for i in range(20):  # an echo of this node's own summary, again and again
        b.judge("echo", 0.9, bytes([i]))
    assert b.scale == pytest.approx(0.06)  # one vote of 32: the quartile stays
    quiet = TrustBook(16, initial=0.2, skip_below=0.15, parameters=10**6, acting=False)
    verdicts = [quiet.judge("bad", -0.5, b"x") for _ in range(6)]  # repeated and disagreeing
    assert all(v.skipped is None and not v.harmful for v in verdicts) and quiet.merges("bad")
    assert quiet.snapshot()["bad"]["skipped"] == 0 and quiet.trust("bad") == 0.0
