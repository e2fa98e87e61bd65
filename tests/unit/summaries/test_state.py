"""summaries/state.py: the outer loop's step (one dishonest peer cannot turn this node's step around),
the inbox, the outer state in a checkpoint, and how many summaries to fetch."""
import math
import random

import pytest
import torch

from swarmnode.summaries import CompressionConfig, OuterConfig, OuterLoop, Received, SummaryInbox, fetch_allowance
from swarmnode.summaries.robust import cosine
from swarmnode.summaries.trust import LOW_TRUST


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


def test_outer_step_weighs_down_the_partner_merged_every_step():
    model = _tiny_model()
    loop = OuterLoop(model, OuterConfig(every_steps=1, outer_lr=1.0, outer_momentum=0.0, partners_per_step=2,
                                        compression=CompressionConfig(0.5, 8, 64), robust=False))
    zero = {n: torch.zeros(s) for n, s in loop.shapes.items()}
    for _ in range(2):  # "fast" alone, twice: nobody to compare with, weight 1
        loop.inbox.put(Received("fast", zero, 0.0, loop.clock(), 0.0))
        loop.step(publish=False)
    anchor = {n: t.clone() for n, t in loop.anchor.items()}
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.2)  # own pseudo-gradient: -0.2
    fast = {n: torch.full(s, 0.6) for n, s in loop.shapes.items()}
    loop.inbox.put(Received("fast", fast, 0.0, loop.clock(), 0.0))
    loop.inbox.put(Received("slow", zero, 0.0, loop.clock(), 0.0))
    assert sorted(loop.step(publish=False).partners) == ["fast", "slow"]
    # merged fast 3, slow 1: median 2, c_fast = 2/3, c_slow = 1;
    # g = (-0.2 + 2/3 * 0.6 + 0) / (1 + 2/3 + 1) = 0.075 (uncorrected: 0.4 / 3; swapped: 0.15)
    for n, p in model.named_parameters():
        assert torch.allclose(p.detach(), anchor[n] - 0.075, atol=1e-6)


def test_inbox_takes_each_summary_once_and_drops_stale_ones():
    inbox = SummaryInbox(max_peers=2)
    item = lambda peer, step: Received(peer, {}, 1.0, step, 0.0)  # noqa: E731
    inbox.put(item("a", 0))
    inbox.put(item("b", 3))
    inbox.put(item("c", 4))  # over max_peers: the least recent ("a") goes
    assert len(inbox) == 2
    taken = inbox.take(5, outer_step=8, max_staleness=4, rng=random.Random(0))
    assert [t.peer for t in taken] == ["c"] and inbox.stale_dropped == 1  # b is 5 outer steps old
    assert inbox.take(5, outer_step=8, max_staleness=4, rng=random.Random(0)) == []


def _tiny_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 2))


def test_lone_outer_step_leaves_training_unchanged_and_a_partner_moves_the_anchor():
    model = _tiny_model()
    loop = OuterLoop(model, OuterConfig(every_steps=1, outer_lr=1.0, outer_momentum=0.0,
                                        compression=CompressionConfig(0.5, 8, 64), robust=False))
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    result = loop.step(publish=True)
    assert result.partners == [] and result.tensors is not None and result.norm > 0
    for n, p in model.named_parameters():  # alone: weights untouched, anchor follows them
        assert torch.equal(p.detach(), before[n]) and torch.equal(loop.anchor[n], before[n])
    # A partner whose pseudo-gradient is 0 halves this node's move: g = (own + 0) / 2.
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.2)
    zero = {n: torch.zeros(s) for n, s in loop.shapes.items()}
    loop.inbox.put(Received("peer", zero, 0.0, loop.clock(), 0.0))
    result = loop.step(publish=False)
    assert result.partners == ["peer"] and result.tensors is None
    for n, p in model.named_parameters():
        assert torch.allclose(p.detach(), before[n] + 0.1, atol=1e-6)
        assert torch.equal(loop.anchor[n], p.detach())


def test_outer_state_round_trips_through_a_checkpoint(tmp_path):
    from swarmnode.store.checkpoints import TrainingState, latest_checkpoint, load_outer_state, save_checkpoint

    model = _tiny_model()
    loop = OuterLoop(model, OuterConfig(compression=CompressionConfig(0.5, 2, 64)))
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p))
    loop.step(publish=True)
    loop.momentum["0.weight"].fill_(0.25)
    loop.recent_partners.extend([("a", "b"), ("a",)])  # the frequency correction's memory comes back too
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    save_checkpoint(tmp_path, model.state_dict(), opt.state_dict(), TrainingState(1, 1, 0, {"outer": loop.state_meta()}),
                    loop.state_tensors())
    other = OuterLoop(_tiny_model(), OuterConfig(compression=CompressionConfig(0.5, 2, 64)))
    path = latest_checkpoint(tmp_path)
    import json
    other.load(load_outer_state(path), json.loads((path / "state.json").read_text())["extra"]["outer"])
    assert other.outer_steps == 1 and list(other.own_norms) == list(loop.own_norms)
    assert list(other.recent_partners) == [(), ("a", "b"), ("a",)]
    for name in loop.anchor:
        assert torch.equal(other.anchor[name], loop.anchor[name])
        assert torch.equal(other.momentum[name], loop.momentum[name])
        assert torch.equal(other.residual[name], loop.residual[name])
    assert math.isfinite(sum(float(t.sum()) for t in other.residual.values()))


def test_fetch_allowance_fetches_about_what_one_outer_step_merges():
    assert fetch_allowance(2, 0, 0) == 2  # a new outer step, empty inbox
    assert fetch_allowance(2, 1, 0) == 1  # one fetch under way
    assert fetch_allowance(2, 1, 1) == 1  # ... and it arrived: not counted twice
    assert fetch_allowance(2, 0, 1) == 1  # one left over from the step before
    assert fetch_allowance(2, 2, 0) == 0  # both places used (a failed fetch uses its place too)
    assert fetch_allowance(2, 0, 5) == 0
    assert fetch_allowance(3, 1, 2) == 1
