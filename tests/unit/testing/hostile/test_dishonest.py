"""The dishonest daemon's bends (swarmnode/testing/hostile/dishonest.py): each attack sends what it says."""
import json
import re

import pytest
import torch

from swarmnode.summaries import CompressionConfig
from swarmnode.summaries.compress import compress
from swarmnode.summaries.outer import global_norm
from swarmnode.summaries.robust import cosine
from swarmnode.summaries import state as outer_state
from swarmnode.summaries.state import Received, SummaryInbox
from swarmnode.testing.hostile.dishonest import ALIE_SHARE, REPLAY_FROM, TURN_AFTER, Bender, install, parse_bend


def own_delta(seed=0):
    g = torch.Generator().manual_seed(seed)
    return {"w": torch.randn(64, 64, generator=g), "b": torch.randn(64, generator=g)}


def test_parse_bend():
    assert parse_bend("sign_flip:8") == ("sign_flip", 8.0, None) and parse_bend("replay") == ("replay", 1.0, None)
    assert parse_bend("turncoat:3@90") == ("turncoat", 3.0, 90.0) and parse_bend("echo").attack == "echo"
    for bad in ("flip:8", "sign_flip:x", "", "turncoat:3@x", "sign_flip:2@5", "turncoat:3@-1", "turncoat:3@"):
        with pytest.raises(ValueError, match=re.escape(f"SWARMNODE_BEND={bad!r}")):
            parse_bend(bad)
    with pytest.raises(ValueError, match="only a turncoat"):
        parse_bend("sign_flip:2@5")


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


def sent_by(bender: Bender, own, residual, cfg):
    """What `bender` sends for `own` (dense) and the residual it keeps."""
    _, sent, kept = bender.compress(compress, own, residual, cfg)
    return sent, kept


def test_turncoat_turns_after_earning_trust_and_replay_repeats_one_summary():
    t, cfg = Bender("turncoat", 8.0), CompressionConfig(0.25, 8, 64)
    zero = {n: torch.zeros_like(x) for n, x in own_delta().items()}
    outs = [sent_by(t, own_delta(), zero, cfg)[0] for _ in range(TURN_AFTER + 1)]
    honest = compress(own_delta(), zero, cfg)[1]
    assert cosine(outs[TURN_AFTER - 1], honest) == pytest.approx(1.0)
    assert cosine(outs[TURN_AFTER], honest) == pytest.approx(-1.0, abs=1e-3)
    r = Bender("replay", 1.0)
    residual = {n: torch.zeros_like(x) for n, x in own_delta().items()}
    sent = [r.compress(compress, own_delta(i), residual, cfg)[0] for i in range(REPLAY_FROM + 3)]
    assert sent[REPLAY_FROM - 1] == sent[REPLAY_FROM] == sent[-1] and sent[0] != sent[REPLAY_FROM - 1]


class FakeClock:
    def __init__(self, now: float):
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_a_timed_turncoat_is_honest_until_its_time_then_flips_its_whole_summary_at_k_and_says_when():
    clock, turns, cfg = FakeClock(1000.0), [], CompressionConfig(0.25, 8, 64)
    t = Bender("turncoat", 3.0, 90.0, clock=clock, on_turn=lambda at, n: turns.append((at, n)))
    residual = honest_residual = {n: torch.zeros_like(x) for n, x in own_delta().items()}
    clock.now = 1089.0
    for i in range(TURN_AFTER + 2):  # more summaries than TURN_AFTER: time decides
        sent, residual = sent_by(t, own_delta(i), residual, cfg)
        _, honest_sent, honest_residual = compress(own_delta(i), honest_residual, cfg)
        assert all(torch.equal(sent[n], honest_sent[n]) for n in sent)
    assert turns == []
    clock.now = 1090.0
    sent, residual = sent_by(t, own_delta(20), residual, cfg)
    _, honest_sent, honest_residual = compress(own_delta(20), honest_residual, cfg)
    # The whole summary it would have sent, flipped at 3x; its error feedback stays the honest one.
    assert cosine(sent, honest_sent) == pytest.approx(-1.0, abs=1e-3)
    assert global_norm(sent) == pytest.approx(3 * global_norm(honest_sent), rel=0.02)
    assert all(torch.equal(residual[n], honest_residual[n]) for n in residual)
    assert turns == [(1090.0, TURN_AFTER + 3)] and t.turned_at == 1090.0
    clock.now = 5000.0
    assert cosine(sent_by(t, own_delta(21), residual, cfg)[0], compress(own_delta(21), honest_residual, cfg)[1]) \
        == pytest.approx(-1.0, abs=1e-3) and len(turns) == 1  # it says so once


def received(peer: str, tensors) -> Received:
    return Received(peer, tensors, global_norm(tensors), 0, 0.0)


def test_an_echo_sends_back_the_victims_latest_summary_and_nothing_else():
    cfg = CompressionConfig(0.25, 8, 64)
    residual = {n: torch.zeros_like(x) for n, x in own_delta().items()}
    victim_sent = [compress(own_delta(s), residual, cfg)[1] for s in (10, 11)]  # what the victim's summaries decode to
    e = Bender("echo", 1.0, echo_peer=lambda: "victim")
    honest = e.compress(compress, own_delta(0), residual, cfg)
    assert honest[0] == compress(own_delta(0), residual, cfg)[0]  # nothing received yet: honest
    e.receive(received("victim", victim_sent[0]))
    e.receive(received("victim", victim_sent[1]))
    e.receive(received("other", own_delta(12)))  # another peer's summary is not echoed
    liars_residual = own_delta(5)  # its own error feedback does not leak into the echo
    tensors, sent, kept = e.compress(compress, own_delta(0), liars_residual, cfg)
    assert all(torch.equal(sent[n], victim_sent[1][n]) for n in sent)  # the latest, exactly
    assert kept is liars_residual


def test_an_installed_echo_catches_the_victims_summaries_entering_the_inbox(monkeypatch, tmp_path):
    monkeypatch.setattr(outer_state, "compress", outer_state.compress)  # restored after the test
    monkeypatch.setattr(SummaryInbox, "put", SummaryInbox.put)
    with pytest.raises(ValueError, match="SWARMNODE_ECHO_HOME"):
        install("echo", environ={})
    with pytest.raises(ValueError, match="SWARMNODE_ECHO_HOME='/nowhere'"):
        install("echo", environ={"SWARMNODE_ECHO_HOME": "/nowhere"})
    install("echo", environ={"SWARMNODE_ECHO_HOME": str(tmp_path)})
    cfg = CompressionConfig(0.25, 8, 64)
    residual = {n: torch.zeros_like(x) for n, x in own_delta().items()}
    victim_sent = compress(own_delta(10), residual, cfg)[1]
    inbox = SummaryInbox(4)
    inbox.put(received("victim", victim_sent))  # before the victim's runtime file exists: not known yet
    assert len(inbox) == 1 and outer_state.compress(own_delta(0), residual, cfg)[0] == compress(own_delta(0), residual, cfg)[0]
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "runtime.json").write_text(json.dumps({"peer_id": "victim"}))
    inbox.put(received("other", own_delta(12)))
    inbox.put(received("victim", victim_sent))
    sent = outer_state.compress(own_delta(0), residual, cfg)[1]
    assert all(torch.equal(sent[n], victim_sent[n]) for n in sent)
