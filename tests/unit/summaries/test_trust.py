"""summaries/trust.py against hand-computed values: how a peer earns and loses trust."""
import pytest

from swarmnode.summaries.trust import (
    LOW_TRUST,
    REPEATED,
    VETOED,
    TrustBook,
    agreement_scale,
    credit_score,
    effective_count,
    harmful,
    lag1_autocorrelation,
    out_of_character,
    relative_agreement,
    score_of,
    trust_of,
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


def test_the_score_is_the_mean_of_the_credit_with_the_prior_counted_twice():
    assert credit_score([], 0.06) == pytest.approx(0.06)
    assert credit_score([0.5], 0.06) == pytest.approx((0.5 + 0.12) / 3)
    assert credit_score([1.0, -1.0, 0.4], 0.06) == pytest.approx((0.4 + 0.12) / 5)


def test_out_of_character_needs_a_record_and_a_fall_of_three_spreads():
    steady = [0.8, 0.9, 0.7, 0.8, 0.9, 0.7]  # mean 0.8, stdev 0.089: the floor 0.4 counts, 0.8 - 1.2 = -0.4
    assert out_of_character(-0.41, steady) and not out_of_character(-0.39, steady)
    assert not out_of_character(-1.0, steady[:5])  # 5 earlier r: too few to compare with
    noisy = [1.0, -1.0, 0.6, 1.0, -0.4, 1.0, 0.2, -1.0]  # mean 0.175, stdev 0.87: 0.175 - 2.61 < -1
    assert not out_of_character(-1.0, noisy)
    assert not out_of_character(0.0, [1.0] * 8)  # only a negative r can be


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
    v = b.judge("p", 0.03, b"1")  # r 0.5: score (0.5 + 2 x 0.06) / 3 = 0.2067, trust 0.689
    assert (v.evidence, v.trust, v.skipped, v.harmful) == (pytest.approx(0.5), pytest.approx(0.62 / 3 / 0.3), None, False)
    v = b.judge("p", 0.03, b"2")  # (1.0 + 0.12) / 4 = 0.28, trust 0.933
    assert v.trust == pytest.approx(0.28 / 0.3)
    assert b.judge("p", 0.03, b"3").trust == 1.0  # (1.5 + 0.12) / 5 = 0.324


def test_harmful_needs_steady_evidence():
    assert not harmful([-1.0] * 5)  # fewer than STRIKE_MIN (6)
    assert harmful([-1.0] * 6)  # mean -1, stdev 0
    # Standard errors over n_eff = n (1 - 0.8) / 1.8 (rho at its floor RHO_FLOOR, 0.8):
    # mean -0.667, stdev sqrt(3.333 / 5) = 0.816, 3 standard errors 3 x 0.816 / sqrt(0.667) = 3.0: not steady
    assert not harmful([-1.0] * 5 + [1.0])
    # mean -0.833, stdev sqrt(3.667 / 11) = 0.577, n_eff 1.333, 3 standard errors 1.5: one +1 in 12
    # is no longer steady (counted over 12 independent r, 0.5, it was)
    assert not harmful([-1.0] * 11 + [1.0])
    # mean -0.967, stdev 0.115, 3 standard errors 0.3: steady
    assert harmful([-1.0] * 11 + [-0.6])
    assert not harmful([1.0, -1.0] * 4)  # an honest peer's noisy signs: mean 0
    assert not harmful([-1.0, -1.0, -1.0, 1.0, -1.0, 1.0])  # mean -0.33: not under -0.5
    assert not harmful([-0.5] * 6)  # not under -0.5


def test_lag1_autocorrelation_and_effective_count_by_hand():
    # mean -0.7; deviations .5 .5 .1 .1 -.3 -.3 -.3 -.3: lag products .25 + .05 + .01 - .03 + 3 x .09
    # = .55 over squares .88
    assert lag1_autocorrelation([-0.2, -0.2, -0.6, -0.6, -1.0, -1.0, -1.0, -1.0]) == pytest.approx(0.625)
    assert lag1_autocorrelation([1.0, -1.0, 1.0, -1.0]) == pytest.approx(-0.75)  # -3 / 4
    assert lag1_autocorrelation([-1.0] * 6) == 0.0  # nothing varies
    assert lag1_autocorrelation([1.0, 2.0]) == 0.0  # too few
    assert effective_count(8, 0.625) == pytest.approx(8 * 0.375 / 1.625)  # 1.846
    assert effective_count(8, -0.75) == 8  # alternating r are no fewer than independent ones
    assert effective_count(16, 0.99) == pytest.approx(16 * 0.1 / 1.9)  # rho at most RHO_MAX (0.9)
    assert effective_count(16, -0.3) == 16  # at least 0


def test_a_run_of_negative_evidence_is_not_steady_but_a_slowly_drifting_flip_is():
    # An honest peer's r in a run, as in the 11-daemon test's failed CI run: mean -0.7, stdev
    # sqrt(.88 / 7) = 0.355. Counted as 8 independent r, 3 standard errors are 0.376 and it
    # was struck; worth n_eff = 8 x 0.2 / 1.8 = 0.889 (its own rho, 0.625, is under the floor
    # 0.8), they are 3 x 0.355 / sqrt(0.889) = 1.13.
    assert not harmful([-0.2, -0.2, -0.6, -0.6, -1.0, -1.0, -1.0, -1.0])
    # A flip whose r drift with this node's direction still varies too little to hide: mean
    # -0.957, stdev 0.041, n_eff 6 x 0.2 / 1.8 = 0.667: 3 standard errors 0.152.
    assert harmful([-0.9, -0.92, -0.95, -0.97, -1.0, -1.0])


def test_a_sign_flipper_is_skipped_at_once_and_struck_from_its_sixth_summary():
    b = book()
    v = b.judge("bad", -0.03, b"1")  # r -0.5: score (-0.5 + 0.12) / 3 < 0; then -1 (the quartile stays 0.06)
    assert (v.trust, v.skipped, v.harmful) == (0.0, LOW_TRUST, False)  # no record yet to be out of character with
    verdicts = [b.judge("bad", -0.06, bytes([i])) for i in range(2, 8)]
    assert [v.harmful for v in verdicts] == [False, False, False, False, True, True]  # mean r under -0.5 from 6 on
    snap = b.snapshot()["bad"]
    assert (snap["judged"], snap["merged"], snap["skipped"], snap["harmful"]) == (7, 0, 7, 2)


def test_a_random_direction_never_earns_weight():
    b = book()
    for i in range(6):
        v = b.judge("rnd", 0.0005, bytes([i]))  # r ~ 0.008: (6 x 0.008 + 0.12) / 8, trust ~ 0.07
    assert v.skipped == LOW_TRUST and not v.harmful


def test_a_turncoat_loses_its_trust_with_its_first_flipped_summary():
    b = book()
    for i in range(12):
        b.judge("turn", 0.06, bytes([i]))  # r = 1
    assert b.trust("turn") == 1.0
    v = b.judge("turn", -0.06, b"flip")  # r = -1, under 1 - 3 x 0.4: vetoed, its credit gone
    assert v.trust == 0.0 and v.skipped == VETOED
    assert b.snapshot()["turn"]["score"] == pytest.approx((-1 + 0.12) / 3, abs=1e-3)


def test_a_trusted_peers_weakly_negative_summary_out_of_character_is_not_merged_either():
    b = book()
    for i in range(12):
        b.judge("turn", 0.06, bytes([i]))  # r = 1: score (12 + 0.12) / 14 = 0.866
    v = b.judge("turn", -0.018, b"f1")  # r -0.3 < 1 - 1.2: out of character, its score (-0.3 + 0.12) / 3
    assert (v.evidence, v.skipped, v.trust) == (pytest.approx(-0.3), LOW_TRUST, 0.0)
    v = b.judge("turn", -0.018, b"f2")  # -0.3 is not under 0.9 - 3 x 0.4 (mean 0.9, stdev 0.36): no credit left all the same
    assert (v.skipped, v.trust) == (LOW_TRUST, 0.0)


def test_an_honest_peers_noisy_evidence_keeps_it_merged():
    b = book()
    rs = [1.0, -1.0, 0.6, 1.0, -0.4, 1.0, 0.2, -1.0, 1.0, -0.6, 0.8, 1.0, -1.0, 0.4, 1.0, -0.8]  # mean 0.2
    verdicts = [b.judge("honest", r * 0.06, bytes([i])) for i, r in enumerate(rs)]
    # The rule before (a score halfway to each lower r, every r <= -0.5 vetoed) merged 6 of these 16.
    assert [v.skipped for v in verdicts].count(None) == 15 and verdicts[1].skipped == LOW_TRUST
    assert not any(v.harmful for v in verdicts) and b.trust("honest") > 0.5


def test_an_honest_peers_occasional_veto_is_forgiven_within_two_agreeing_summaries():
    b = book()
    for i in range(6):
        b.judge("honest", 0.03, bytes([i]))  # r 0.5: a record with mean 0.5, the floor 0.4 as its spread
    assert b.judge("honest", -0.048, b"bad luck").skipped == VETOED  # r -0.8 < 0.5 - 1.2
    assert b.trust("honest") == 0.0 and b.snapshot()["honest"]["score"] == pytest.approx((-0.8 + 0.12) / 3, abs=1e-3)
    assert b.judge("honest", 0.03, b"next").skipped == LOW_TRUST  # (-0.3 + 0.12) / 4 < 0
    v = b.judge("honest", 0.03, b"next2")  # (0.2 + 0.12) / 5 = 0.064: trust 0.213, merged
    assert v.skipped is None and v.trust == pytest.approx(0.064 / 0.3)


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
    other.restore("wild", 55.0, -3)  # a corrupt row is clamped (a score over FULL_AT buys nothing more)
    assert other.snapshot()["wild"]["score"] == 0.3 and other.snapshot()["wild"]["judged"] == 0


def test_a_restored_standing_is_no_credit_for_a_turn():
    b = book()
    b.restore("fresh", 0.945, 40)  # a steady agreer's saved score, restored at FULL_AT
    assert b.snapshot()["fresh"]["score"] == 0.3
    v = b.judge("fresh", -0.06, b"x")  # r -1 with no record yet: (-1 + 2 x 0.3) / 3 < 0
    assert (v.skipped, v.trust) == (LOW_TRUST, 0.0)
    b.restore("turn", 0.945, 40)
    for i in range(8):
        b.judge("turn", 0.06, bytes([i]))  # r = 1
    v = b.judge("turn", -0.024, b"f")  # r -0.4 < 1 - 1.2: its credit and its restored standing are gone
    assert (v.skipped, v.trust) == (LOW_TRUST, 0.0)
    assert b.snapshot()["turn"]["score"] == pytest.approx((-0.4 + 2 * 0.06) / 3, abs=1e-3)  # rounded in the snapshot


def test_one_peer_has_one_vote_in_the_agreement_scale_and_scoring_alone_acts_on_nothing():
    b = book()
    for i in range(20):  # an echo of this node's own summary, again and again
        b.judge("echo", 0.9, bytes([i]))
    assert b.scale == pytest.approx(0.06)  # one vote of 32: the quartile stays
    quiet = TrustBook(16, initial=0.2, skip_below=0.15, parameters=10**6, acting=False)
    verdicts = [quiet.judge("bad", -0.5, b"x") for _ in range(6)]  # repeated and disagreeing
    assert all(v.skipped is None and not v.harmful for v in verdicts) and quiet.merges("bad")
    assert quiet.snapshot()["bad"]["skipped"] == 0 and quiet.trust("bad") == 0.0


def test_saving_standings_does_not_keep_a_peer_in_the_book():
    b = TrustBook(2, initial=0.2, skip_below=0.15, parameters=10**6)
    b.judge("old", 0.03, b"a")
    b.judge("new", 0.03, b"a")
    assert [p for p, _, _ in b.saved(["old"])] == ["old"]  # saved, but not judged again
    b.judge("newest", 0.03, b"a")  # over capacity: the least recently judged goes
    assert set(b.snapshot()) == {"new", "newest"}
