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
    # It points against this node's published summary too: none of its disagreement is taken out.
    # A newcomer has no record to be out of character with: its score falls under zero at once.
    assert result.verdicts[0].agreement == pytest.approx(-1.0, abs=1e-4) and result.verdicts[0].skipped == LOW_TRUST
    moved = {n: anchor[n] - loop.anchor[n] for n in anchor}
    assert cosine(moved, direction) == pytest.approx(1.0, abs=1e-4)  # two own steps, nothing else


def test_a_newcomer_is_merged_at_its_trust_and_clipped_to_own_norm():
    model, loop = _loop()
    direction = {n: torch.randn(s) for n, s in loop.shapes.items()}
    _train(model, direction, 0.1)
    loop.step(publish=False)  # nothing published: the peer's agreement is not an echo of it
    before = {n: t.clone() for n, t in loop.anchor.items()}
    _train(model, direction, 0.1)
    own = {n: 0.1 * d for n, d in direction.items()}
    honest = {n: 0.1 * d + 0.6 * torch.randn(d.shape) for n, d in direction.items()}  # far off own: clipped
    loop.inbox.put(Received("new", honest, 0.0, loop.clock(), 0.0, b"1"))
    result = loop.step(publish=False)
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


def _own_u_then_v(model, loop, publish: bool):
    """One outer step whose own delta is the unit vector u (on the first tensor), then local
    steps along v (on the second), the next outer step not yet taken: D will be k u + v."""
    u = {n: torch.zeros(s) for n, s in loop.shapes.items()}
    v = {n: torch.zeros(s) for n, s in loop.shapes.items()}
    first, second = list(loop.shapes)[:2]
    u[first].view(-1)[0], v[second].view(-1)[0] = 1.0, 1.0
    _train(model, u, 1.0)
    loop.step(publish=publish)
    _train(model, v, 1.0)
    return u, v, first


def test_peers_are_judged_against_the_decaying_sum_of_own_deltas():
    # D_t = decay D_{t-1} + own_t: after own (1 along u), then own (1 along v),
    # D = k u + v (k the decay an outer step). A peer sending exactly u agrees with
    # cos(u, k u + v) = k / sqrt(k^2 + 1).

    model, loop = _loop()
    u, v, first = _own_u_then_v(model, loop, publish=False)  # published, u would be an echo (next test)
    loop.inbox.put(Received("peer", u, 0.0, loop.clock(), 0.0, b"1"))
    result = loop.step(publish=False)
    k = loop.direction_decay
    assert k == pytest.approx(math.exp(-1 / 200))  # H = 1
    assert result.verdicts[0].agreement == pytest.approx(k / math.sqrt(k * k + 1), abs=1e-5)
    state = loop.state_tensors()  # checkpointed with the outer loop, and restored
    other = _loop()[1]
    other.load(state, loop.state_meta())
    assert torch.equal(other.direction[first], loop.direction[first])
    del state[f"direction.{first}"]  # a checkpoint of an older release: no direction, zeros
    _loop()[1].load({k: t for k, t in state.items() if not k.startswith("direction.")}, {})


def test_an_echo_of_this_nodes_summary_earns_nothing_and_a_flipped_echo_keeps_its_disagreement():
    # Own published u, then v (dense enough to be sent whole); D = k u + v.
    model, loop = _loop()
    u, v, first = _own_u_then_v(model, loop, publish=True)
    w = {n: torch.zeros(s) for n, s in loop.shapes.items()}
    w[first].view(-1)[1] = 1.0  # a direction this node never sent, nor moved along
    loop.inbox.put(Received("echo", {n: 2 * u[n] + w[n] for n in u}, 0.0, loop.clock(), 0.0, b"1"))
    loop.inbox.put(Received("flip", {n: -u[n] for n in u}, 0.0, loop.clock(), 0.0, b"2"))
    result = loop.step(publish=True)
    by_peer = {x.peer: x for x in result.verdicts}
    # its u part taken out (up to the 8-bit quantization of what was sent); w is orthogonal to D
    assert by_peer["echo"].agreement == pytest.approx(0.0, abs=1e-3)
    k = loop.direction_decay
    assert by_peer["flip"].agreement == pytest.approx(-k / math.sqrt(k * k + 1), abs=1e-3)
    assert by_peer["flip"].skipped == LOW_TRUST  # a newcomer: under zero at once, no credit to veto


def test_peers_are_judged_against_the_loss_gradients_of_the_local_steps_when_recorded():
    # Two local steps with gradients g1 and g2 (the .grad the trainer leaves): D = g1 + g2,
    # whatever the weights did (Adam's step is not the gradient's direction).
    model, loop = _loop()
    g1 = {n: torch.randn(s) for n, s in loop.shapes.items()}
    g2 = {n: torch.randn(s) for n, s in loop.shapes.items()}
    for g in (g1, g2):
        for name, p in loop.params.items():
            p.grad = g[name].clone()
        loop.add_gradient()
    _train(model, {n: torch.randn(s) for n, s in loop.shapes.items()}, 0.1)  # unrelated to g
    peer = {n: g1[n] + g2[n] for n in g1}
    loop.inbox.put(Received("peer", peer, 0.0, loop.clock(), 0.0, b"1"))
    result = loop.step(publish=False)
    assert result.verdicts[0].agreement == pytest.approx(1.0, abs=1e-5)
    assert loop.gradients_added == 0 and all(float(g.abs().sum()) == 0 for g in loop.gradient_sum.values())
    # The next outer step: D = k (g1 + g2) + g3
    g3 = {n: torch.randn(s) for n, s in loop.shapes.items()}
    for name, p in loop.params.items():
        p.grad = g3[name].clone()
    loop.add_gradient()
    _train(model, {n: torch.randn(s) for n, s in loop.shapes.items()}, 0.1)
    loop.inbox.put(Received("peer", g3, 0.0, loop.clock(), 0.0, b"2"))
    expected = cosine(g3, {n: loop.direction_decay * (g1[n] + g2[n]) + g3[n] for n in g1})
    assert loop.step(publish=False).verdicts[0].agreement == pytest.approx(expected, abs=1e-5)


def test_the_direction_remembers_about_200_local_steps_whatever_h():
    from swarmnode.summaries.state import direction_decay

    assert direction_decay(4) == pytest.approx(0.98020, abs=1e-5)  # exp(-4 / 200)
    assert direction_decay(20) == pytest.approx(0.90484, abs=1e-5)
    assert direction_decay(4) ** 50 == pytest.approx(direction_decay(20) ** 10)  # both 200 local steps


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
