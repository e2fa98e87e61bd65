"""summaries/compress.py against hand-computed values: chunked top-k with error feedback, and its size."""
import numpy as np
import torch

from swarmnode.protocol.generated import gradient_summary_pb2 as pb
from swarmnode.protocol.limits import check_gradient_summary_structure
from swarmnode.summaries import CompressionConfig, compress, decode_tensor, dense_bytes, gap_coded
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
    assert np.frombuffer(t.indices, "<u2").tolist() == [1, 3, 1, 2, 0, 1]  # per chunk, ascending
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


def test_gap_coded_offsets_decode_to_the_same_tensors_in_under_half_the_index_bytes():
    from swarmnode.policy import load_policy

    model = load_policy("bundled:tiny-policy").model
    shapes = {n: tuple(p.shape) for n, p in model.named_parameters()}
    torch.manual_seed(1)
    delta = {n: 1e-4 * torch.randn(s) for n, s in shapes.items()}
    cfg = CompressionConfig(density=0.02, bits=2, chunk_size=4096)
    tensors, sent, _ = compress(delta, {}, cfg)
    coded = gap_coded(tensors, 4096, cfg.per_chunk)

    def summary(scheme, ts):
        return pb.GradientSummary(model_fingerprint="m", base_fingerprint="b", scheme=scheme, tensors=ts,
                                  chunk_size=4096, per_chunk=cfg.per_chunk, summary_id=1, created_at=1.0)

    plain, gaps = summary(pb.COMPRESSION_SCHEME_CHUNKED_TOPK, tensors), summary(pb.COMPRESSION_SCHEME_CHUNKED_TOPK_GAPS, coded)
    assert check_gradient_summary_structure(gaps) is None
    for t, c in zip(tensors, coded):
        assert torch.equal(decode_tensor(c, 4096, cfg.per_chunk, gaps=True), sent[t.name])
        assert c.values == t.values and c.scales == t.scales
    index_bytes = [sum(len(t.indices) for t in ts) for ts in (tensors, coded)]
    assert index_bytes[1] < 0.5 * index_bytes[0], index_bytes  # ~7.5 bits an entry against 16
    assert len(gaps.SerializeToString()) < 0.65 * len(plain.SerializeToString())


def test_a_gap_coded_tensor_whose_offsets_do_not_decode_is_refused_whole():
    value = torch.tensor([0.1, -5.0, 0.2, 4.0, 0.0, 0.3, -0.4, 0.05])
    cfg = CompressionConfig(density=0.5, bits=8, chunk_size=4)
    [t] = gap_coded(compress({"w": value}, {}, cfg)[0], 4, 2)
    t.indices = t.indices + b"\x01"  # one more closing bit than entries
    problem = check_gradient_summary_structure(pb.GradientSummary(
        model_fingerprint="m", base_fingerprint="b", scheme=pb.COMPRESSION_SCHEME_CHUNKED_TOPK_GAPS, tensors=[t],
        chunk_size=4, per_chunk=2))
    assert problem is not None and problem.startswith("tensor w:"), problem


def test_the_size_bound_holds_a_real_summary_and_names_the_density_that_fits():
    from swarmnode.policy import load_policy
    from swarmnode.summaries.compress import gap_coded_bytes_at_most, largest_density_within

    model = load_policy("bundled:tiny-policy").model
    shapes = {n: tuple(p.shape) for n, p in model.named_parameters()}
    cfg = CompressionConfig(density=0.02, bits=2, chunk_size=4096)
    torch.manual_seed(2)
    tensors, _, _ = compress({n: torch.randn(s) for n, s in shapes.items()}, {}, cfg)
    coded = pb.GradientSummary(model_fingerprint="m" * 64, base_fingerprint="b" * 64, summary_id=2**62,
                               scheme=pb.COMPRESSION_SCHEME_CHUNKED_TOPK_GAPS, chunk_size=4096, per_chunk=cfg.per_chunk,
                               tensors=gap_coded(tensors, 4096, cfg.per_chunk), created_at=1.0)
    actual, bound = len(coded.SerializeToString()), gap_coded_bytes_at_most(shapes, cfg)
    assert actual <= bound <= 1.3 * actual, (actual, bound)
    # A 494M-parameter model at 2% (~12 MB) does not fit 4 MiB; 22 entries of each 4,096 do, 23 do not.
    big = {"w": (494_000_000,)}
    cap = 4 * 2**20 - 65536
    assert gap_coded_bytes_at_most(big, cfg) > cap
    fits = largest_density_within(big, cfg, cap)
    assert fits == 0.00537 and CompressionConfig(fits, 2, 4096).per_chunk == 22  # 22 / 4096 = 0.005371
    assert gap_coded_bytes_at_most(big, CompressionConfig(fits, 2, 4096)) <= cap
    assert gap_coded_bytes_at_most(big, CompressionConfig(23 / 4096, 2, 4096)) > cap
    assert largest_density_within({"w": (7_000_000_000,)}, cfg, cap) is None  # not one entry a chunk fits
