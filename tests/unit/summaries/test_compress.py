"""Gradient summaries' math against hand-computed values: compression with error feedback,
the merge, the outer step, staleness weights, and the outer loop's state."""
import math
import random

import numpy as np
import pytest
import torch

from swarmnode.protocol.generated import gradient_summary_pb2 as pb
from swarmnode.protocol.limits import check_gradient_summary_structure
from swarmnode.summaries import (
    CompressionConfig,
    OuterConfig,
    OuterLoop,
    Received,
    SummaryInbox,
    compress,
    decode_tensor,
    dense_bytes,
    fetch_allowance,
    frequency_corrections,
    merge_pseudo_gradients,
    outer_update,
    peer_weights,
    pseudo_gradient,
)
from swarmnode.summaries.compress import dequantize, pack_codes, quantize, unpack_codes


def test_codes_stand_for_the_documented_values():
    # b = 2: value(q) = s (2q + 1 - 4) / 3  ->  -s, -s/3, s/3, s
    s = torch.tensor(3.0)
    assert dequantize(torch.tensor([0, 1, 2, 3]), s, 2).tolist() == [-3.0, -1.0, 1.0, 3.0]
    assert quantize(torch.tensor([-3.0, -1.2, 0.9, 2.5]), s, 2).tolist() == [0, 1, 2, 3]
    assert quantize(torch.tensor([0.5]), torch.tensor(0.0), 2).tolist() == [2]  # zero scale: a middle code
    codes = np.array([3, 0, 1, 2, 1])
    assert pack_codes(codes, 2) == bytes([0b10_01_00_11, 0b01])  # first code in the lowest bits
    for bits in (2, 4, 8):
        c = np.random.default_rng(bits).integers(0, 2**bits, 37)
        assert unpack_codes(pack_codes(c, bits), bits, 37).tolist() == c.tolist()


def test_chunked_topk_keeps_the_largest_per_chunk():
    value = torch.tensor([0.1, -5.0, 0.2, 4.0, 0.0, 0.3, -0.4, 0.05, 9.0, 0.01])  # chunks of 4: [4, 4, 2]
    cfg = CompressionConfig(density=0.5, bits=8, chunk_size=4)  # 2 per chunk
    [t], [decoded], residual = (lambda r: ([r[0][0]], [r[1]["w"]], r[2]))(compress({"w": value}, {}, cfg))
    assert check_gradient_summary_structure(pb.GradientSummary(
        model_fingerprint="m", base_fingerprint="b", scheme=pb.COMPRESSION_SCHEME_CHUNKED_TOPK, tensors=[t],
        chunk_size=4, per_chunk=2)) is None
    assert np.frombuffer(t.indices, "<u2").tolist() == [1, 3, 2, 1, 0, 1]  # per chunk, largest first
    kept = decoded.nonzero().flatten().tolist()
    assert kept == [1, 3, 5, 6, 8, 9]
    assert torch.allclose(decoded[[1, 3, 6, 8]], torch.tensor([-5.0, 4.0, -0.4, 9.0]), rtol=0.01)
    assert torch.equal(decode_tensor(t, 4, 2), decoded)
    assert torch.allclose(residual["w"] + decoded, value)  # error feedback: nothing dropped


def test_error_feedback_carries_what_was_not_sent_into_the_next_summary():
    torch.manual_seed(0)
    delta = {"w": torch.randn(64, 64)}
    cfg = CompressionConfig(density=0.05, bits=2, chunk_size=256)
    residual, sent_total = {}, torch.zeros(64, 64)
    for _ in range(60):  # the same delta each round: the sum sent tracks the sum made
        _, sent, residual = compress(delta, residual, cfg)
        sent_total += sent["w"]
    assert torch.allclose(sent_total + residual["w"], 60 * delta["w"], atol=1e-3)
    # The residual stays bounded (a few deltas' worth) while the sum sent grows with the rounds.
    assert residual["w"].norm() < 10 * delta["w"].norm() < 0.2 * sent_total.norm()


def test_summary_is_over_50x_smaller_than_the_dense_fp32_delta():
    from swarmnode.policy import load_policy

    model = load_policy("bundled:tiny-policy").model
    shapes = {n: tuple(p.shape) for n, p in model.named_parameters()}
    torch.manual_seed(0)
    delta = {n: 1e-4 * torch.randn(s) for n, s in shapes.items()}
    tensors, _, _ = compress(delta, {}, CompressionConfig(density=0.02, bits=2, chunk_size=4096))
    summary = pb.GradientSummary(model_fingerprint="m", base_fingerprint="b", scheme=pb.COMPRESSION_SCHEME_CHUNKED_TOPK,
                                 tensors=tensors, chunk_size=4096, per_chunk=82, summary_id=1, created_at=1.0)
    dense = dense_bytes(shapes)
    assert dense == 4 * sum(p.numel() for p in model.parameters())
    ratio = dense / len(summary.SerializeToString())
    assert ratio >= 50, ratio


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
