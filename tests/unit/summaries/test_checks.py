"""A peer's gradient summary against this node's model (summaries/checks.py check_summary): every
rejection reason from summaries made with the real compressor and then corrupted, a valid one
decoding to finite tensors of the model's shapes, and, whatever a peer sends, no NaN or Inf ever
reaching the outer loop's weights. The node's fetch path around it is tested in
tests/unit/node/gossip/test_summaries.py.

The corruptions are the hostile peer's (swarmnode/testing/hostile/summary_crafting.py): each still passes
the wire's structural checks, so only check_summary stands between it and the weights.
"""
import math
import time

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swarmnode.protocol.codec import Rejected, RejectReason
from swarmnode.protocol.generated import gradient_summary_pb2 as pb
from swarmnode.protocol.limits import check_ranges, check_structure
from swarmnode.summaries import OuterConfig, OuterLoop, Received, check_summary, compress, norm_bound
from swarmnode.summaries.checks import OWN_NORMS_TO_JUDGE
from swarmnode.summaries.outer import global_norm
from swarmnode.testing.hostile.summary_crafting import CORRUPTIONS, corrupted, honest_delta
from tests.unit.summaries.helpers import BASE, CFG, SHAPES, summary, tiny_model


def check(s: pb.GradientSummary, max_norm: float = 1.0):
    return check_summary(s, sender="peer", base_fingerprint=BASE, shapes=SHAPES, max_norm=max_norm)


def reason_of(s: pb.GradientSummary, max_norm: float = 1.0) -> str:
    with pytest.raises(Rejected) as info:
        check(s, max_norm)
    assert info.value.sender == "peer"  # a verified sender: the rejection is held against it
    return info.value.reason.value


# -- each reason ---------------------------------------------------------------------------------


def test_valid_summary_decodes_to_finite_tensors_of_the_models_shapes():
    s = summary()
    assert check_structure(s) is None and check_ranges(s) is None
    tensors, norm = check(s)
    assert {n: tuple(t.shape) for n, t in tensors.items()} == SHAPES
    assert all(t.dtype == torch.float32 and bool(torch.isfinite(t).all()) for t in tensors.values())
    # It decodes to exactly what the sender's compressor says it sent, and the norm is that of it.
    _, sent, _ = compress(honest_delta(SHAPES), {}, CFG)
    for name in SHAPES:
        assert torch.equal(tensors[name], sent[name])
    assert norm == pytest.approx(global_norm(sent)) and 0 < norm < 1.0


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_each_corruption_passes_the_wire_checks_and_is_rejected_for_its_reason(name):
    s = corrupted(name, summary())
    # The wire's structural and range checks let it through: only check_summary refuses it.
    assert check_structure(s) is None and check_ranges(s) is None
    assert reason_of(s, max_norm=1.0) == CORRUPTIONS[name][1]


def test_more_rejection_reasons_by_hand():
    s = summary()
    s.scheme = pb.COMPRESSION_SCHEME_TOPK
    assert reason_of(s) == "bad_tensor"
    s = summary()
    s.tensors[0].value_dtype = pb.VALUE_DTYPE_FLOAT16
    assert reason_of(s) == "bad_tensor"
    s = summary()
    s.tensors.add().CopyFrom(s.tensors[0])  # a name twice (protocol.limits refuses it too)
    assert reason_of(s) == "bad_tensor"
    s = summary()
    s.tensors[0].shape[:] = [1, *s.tensors[0].shape]  # an extra unit dimension: same elements
    assert reason_of(s) == "bad_tensor"
    # The base is checked first: a summary of another base is wrong_base whatever else it holds.
    assert reason_of(corrupted("wrong_base", corrupted("nan_scale", summary()))) == "wrong_base"
    # The largest summary the format holds (every scale 65504) is finite: only the bound stops it.
    tensors, norm = check(corrupted("max_scales", summary()), max_norm=math.inf)
    assert math.isfinite(norm) and norm > 65504 and all(bool(torch.isfinite(t).all()) for t in tensors.values())
    # The norm bound: just under passes, just over is norm_too_large.
    _, norm = check(summary())
    check(summary(), max_norm=norm * 1.0001)
    assert reason_of(summary(), max_norm=norm * 0.9999) == "norm_too_large"


def test_norm_bound_is_relative_to_own_summaries():
    assert norm_bound([], 10.0) is None
    assert norm_bound([0.5, 2.0], 10.0) is None  # too few own summaries to judge by
    assert norm_bound([0.5, 2.0, 1.0], 10.0) == 20.0
    assert norm_bound([0.01, 0.12, 0.13, 0.11], 10.0) == pytest.approx(1.3)


# -- nothing non-finite reaches the weights ----------------------------------------------------------

FLOAT16_BITS = st.integers(0, 0xFFFF)  # every float16: NaN, +-Inf, subnormals, 65504 included


@st.composite
def hostile_summaries(draw) -> pb.GradientSummary:
    """An honest summary with any chunk scales overwritten by arbitrary float16 bit patterns,
    code bytes flipped, and now and then a named corruption on top."""
    s = summary(seed=draw(st.integers(0, 3)), magnitude=draw(st.sampled_from([1e-4, 1e-2, 1.0])))
    for _ in range(draw(st.integers(0, 4))):
        t = s.tensors[draw(st.integers(0, len(s.tensors) - 1))]
        scales = np.frombuffer(t.scales, dtype="<u2").copy()
        scales[draw(st.integers(0, len(scales) - 1))] = draw(FLOAT16_BITS)
        t.scales = scales.astype("<u2").tobytes()
    for _ in range(draw(st.integers(0, 2))):
        t = s.tensors[draw(st.integers(0, len(s.tensors) - 1))]
        values = bytearray(t.values)
        values[draw(st.integers(0, len(values) - 1))] = draw(st.integers(0, 255))
        t.values = bytes(values)
    if draw(st.booleans()):
        s = corrupted(draw(st.sampled_from(sorted(CORRUPTIONS))), s)
    return s


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(hostile_summaries(), min_size=1, max_size=6), st.integers(0, 2**16))
def test_a_nan_never_reaches_the_weights(summaries, seed):
    """The node's order of things: each outer step merges what check_summary accepted (judged
    against 10x this node's own norms, as the node does); whatever peers sent, the weights, the
    anchor and the momentum stay finite, and an accepted summary is finite and within the bound."""
    model = tiny_model()
    loop = OuterLoop(model, OuterConfig(every_steps=1, outer_momentum=0.5, partners_per_step=2,
                                        compression=CFG), seed=seed)
    g = torch.Generator().manual_seed(seed)

    def local_steps():
        with torch.no_grad():
            for p in model.parameters():
                p.add_(1e-2 * torch.randn(p.shape, generator=g))

    for _ in range(OWN_NORMS_TO_JUDGE):  # this node's own summaries: the yardstick of the norm bound
        local_steps()
        loop.step(publish=True)
    for i, s in enumerate(summaries):
        max_norm = norm_bound(list(loop.own_norms), 10.0)
        try:
            tensors, norm = check(s, max_norm)
        except Rejected as r:
            assert r.reason in (RejectReason.WRONG_BASE, RejectReason.BAD_TENSOR, RejectReason.NON_FINITE,
                                RejectReason.NORM_TOO_LARGE)
        else:
            assert set(tensors) == set(SHAPES) and all(tuple(t.shape) == SHAPES[n] for n, t in tensors.items())
            assert all(bool(torch.isfinite(t).all()) for t in tensors.values()) and math.isfinite(norm)
            assert norm <= max_norm
            loop.inbox.put(Received(f"peer{i}", tensors, norm, loop.clock(), time.monotonic()))
        local_steps()
        loop.step(publish=True)
        for state in (dict(model.named_parameters()), loop.anchor, loop.momentum, loop.residual):
            assert all(bool(torch.isfinite(t).all()) for t in state.values())
