"""The dishonest daemon's bends (swarmnode/testing/hostile/dishonest.py): each attack sends what it says."""
import pytest
import torch

from swarmnode.summaries import CompressionConfig
from swarmnode.summaries.compress import compress
from swarmnode.summaries.outer import global_norm
from swarmnode.summaries.robust import cosine
from swarmnode.testing.hostile.dishonest import ALIE_SHARE, REPLAY_FROM, TURN_AFTER, Bender, parse_bend


def own_delta(seed=0):
    g = torch.Generator().manual_seed(seed)
    return {"w": torch.randn(64, 64, generator=g), "b": torch.randn(64, generator=g)}


def test_parse_bend():
    assert parse_bend("sign_flip:8") == ("sign_flip", 8.0) and parse_bend("replay") == ("replay", 1.0)
    for bad in ("flip:8", "sign_flip:x", ""):
        with pytest.raises(ValueError):
            parse_bend(bad)


def test_sign_flip_and_random_at_k_times_the_honest_norm():
    own = own_delta()
    flipped = Bender("sign_flip", 8.0).bend(own)
    assert cosine(flipped, own) == pytest.approx(-1.0) and global_norm(flipped) == pytest.approx(8 * global_norm(own), rel=1e-5)
    rnd = Bender("random", 4.0).bend(own)
    assert abs(cosine(rnd, own)) < 0.1 and global_norm(rnd) == pytest.approx(4 * global_norm(own), rel=1e-5)


def test_colluders_push_one_fixed_direction_and_alie_biases_a_few_coordinates():
    a, b = Bender("collude", 4.0), Bender("collude", 4.0)
    assert cosine(a.bend(own_delta(0)), b.bend(own_delta(1))) == pytest.approx(1.0)
    own = own_delta()
    bent = Bender("alie", 1.0).bend(own)
    changed = (bent["w"] != own["w"]).float().mean().item()
    assert 0.3 * ALIE_SHARE < changed < 3 * ALIE_SHARE
    assert cosine(bent, own) > 0.9  # inside the spread: it still agrees


def test_turncoat_turns_after_earning_trust_and_replay_repeats_one_summary():
    t = Bender("turncoat", 8.0)
    outs = [t.bend(own_delta()) for _ in range(TURN_AFTER + 1)]
    assert cosine(outs[TURN_AFTER - 1], own_delta()) == pytest.approx(1.0)
    assert cosine(outs[TURN_AFTER], own_delta()) == pytest.approx(-1.0)
    r, cfg = Bender("replay", 1.0), CompressionConfig(0.25, 8, 64)
    residual = {n: torch.zeros_like(x) for n, x in own_delta().items()}
    sent = [r.compress(compress, own_delta(i), residual, cfg)[0] for i in range(REPLAY_FROM + 3)]
    assert sent[REPLAY_FROM - 1] == sent[REPLAY_FROM] == sent[-1] and sent[0] != sent[REPLAY_FROM - 1]
