"""Hostile gradient summaries, made with the real compressor and then corrupted (pure: no I/O).

A summary here starts honest: `compress` (swarmnode.summaries.compress) over a small random
pseudo-gradient of a model's parameter shapes, in the wire's chunked top-k layout. Each
corruption then changes as little as possible so that the message still passes the wire's
structural checks (protocol.limits: lengths, offsets, code widths) and is refused only by the
receiver's model checks (summaries.checks.check_summary), for the reason named in CORRUPTIONS.

Shared by swarmnode/testing/hostile/summary_attacks.py (served by a real peer process) and
tests/unit/summaries/test_checks.py.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
import torch

from swarmnode.protocol.generated import gradient_summary_pb2 as pb
from swarmnode.summaries.compress import CompressionConfig, compress

FP16_MAX = 65504.0
OTHER_BASE = "0123456789abcdef"  # no model's base: a summary of weights the victim never had
# Chunks of 1024 at 2%: a few dozen chunks for the tiny policy's largest tensors, one for a bias.
CONFIG = CompressionConfig(density=0.02, bits=2, chunk_size=1024)


def honest_delta(shapes: dict[str, tuple[int, ...]], *, magnitude: float = 1e-4, seed: int = 0) -> dict[str, torch.Tensor]:
    """A pseudo-gradient of plausible size: N(0, magnitude^2) per parameter."""
    g = torch.Generator().manual_seed(seed)
    return {name: magnitude * torch.randn(shape, generator=g) for name, shape in shapes.items()}


def make_summary(shapes: dict[str, tuple[int, ...]], *, base_fingerprint: str, model_fingerprint: str = "m" * 16,
                 summary_id: int = 1, created_at: float = 1.0, window: int = 0, config: CompressionConfig = CONFIG,
                 magnitude: float = 1e-4, seed: int = 0) -> pb.GradientSummary:
    """An honest chunked top-k summary of a random pseudo-gradient over `shapes`."""
    tensors, _, _ = compress(honest_delta(shapes, magnitude=magnitude, seed=seed), {}, config)
    return pb.GradientSummary(
        model_fingerprint=model_fingerprint, base_fingerprint=base_fingerprint, base_version=0, step_start=0,
        step_end=4, scheme=pb.COMPRESSION_SCHEME_CHUNKED_TOPK, tensors=tensors, chunk_size=config.chunk_size,
        per_chunk=config.per_chunk, window=window, num_samples=64, created_at=created_at, summary_id=summary_id,
    )


def _scales(t: pb.CompressedTensor) -> np.ndarray:
    return np.frombuffer(t.scales, dtype="<f2").copy()


def _largest(summary: pb.GradientSummary) -> pb.CompressedTensor:
    """The tensor with the most elements (a 2-D weight in any transformer)."""
    return max(summary.tensors, key=lambda t: (math.prod(t.shape), t.name))


def set_scale(summary: pb.GradientSummary, value: float, chunk: int = 0) -> pb.GradientSummary:
    """One chunk scale of the largest tensor set to `value` (as float16: NaN and +-Inf included)."""
    t = _largest(summary)
    scales = _scales(t)
    scales[chunk % len(scales)] = np.float16(value)
    t.scales = scales.astype("<f2").tobytes()
    return summary


def scale_all(summary: pb.GradientSummary, factor: float) -> pb.GradientSummary:
    """Every chunk scale times `factor`, kept within float16's finite range (|scale| <= FP16_MAX)."""
    for t in summary.tensors:
        scales = np.clip(_scales(t).astype(np.float64) * factor, -FP16_MAX, FP16_MAX).astype("<f2")
        t.scales = scales.tobytes()
    return summary


def set_all_scales(summary: pb.GradientSummary, value: float) -> pb.GradientSummary:
    """Every chunk scale = `value` (finite float16): a summary as large as the format allows."""
    for t in summary.tensors:
        t.scales = np.full(len(t.scales) // 2, value, dtype="<f2").tobytes()
    return summary


def flatten_shape(summary: pb.GradientSummary) -> pb.GradientSummary:
    """The largest tensor's shape flattened to (numel,): same element count, so the same
    chunking and lengths (the wire's checks pass), but not the receiver's parameter shape."""
    t = _largest(summary)
    numel = math.prod(t.shape)
    del t.shape[:]
    t.shape.append(numel)
    return summary


def transpose_shape(summary: pb.GradientSummary) -> pb.GradientSummary:
    """The first non-square 2-D tensor's shape reversed (same element count)."""
    for t in summary.tensors:
        if len(t.shape) == 2 and t.shape[0] != t.shape[1]:
            t.shape[:] = [t.shape[1], t.shape[0]]
            return summary
    return flatten_shape(summary)


def drop_tensor(summary: pb.GradientSummary) -> pb.GradientSummary:
    """The largest tensor left out."""
    name = _largest(summary).name
    kept = [t for t in summary.tensors if t.name != name]
    del summary.tensors[:]
    summary.tensors.extend(kept)
    return summary


def rename_tensor(summary: pb.GradientSummary, name: str = "model.evil.weight") -> pb.GradientSummary:
    """The largest tensor under a name the receiver's model does not have."""
    _largest(summary).name = name
    return summary


def other_base(summary: pb.GradientSummary) -> pb.GradientSummary:
    summary.base_fingerprint = OTHER_BASE
    return summary


Corruption = Callable[[pb.GradientSummary], pb.GradientSummary]
# name -> (corruption of an honest summary, the rejection reason check_summary gives it)
CORRUPTIONS: dict[str, tuple[Corruption, str]] = {
    "nan_scale": (lambda s: set_scale(s, math.nan), "non_finite"),
    "inf_scale": (lambda s: set_scale(s, math.inf), "non_finite"),
    "neg_inf_scale": (lambda s: set_scale(s, -math.inf, chunk=-1), "non_finite"),
    "flat_shape": (flatten_shape, "bad_tensor"),
    "transposed_shape": (transpose_shape, "bad_tensor"),
    "missing_tensor": (drop_tensor, "bad_tensor"),
    "unknown_tensor": (rename_tensor, "bad_tensor"),
    "huge_norm": (lambda s: scale_all(s, 1e4), "norm_too_large"),
    "max_scales": (lambda s: set_all_scales(s, FP16_MAX), "norm_too_large"),
    "wrong_base": (other_base, "wrong_base"),
}


def corrupted(name: str, summary: pb.GradientSummary) -> pb.GradientSummary:
    """A copy of `summary` with corruption `name` applied."""
    copy = pb.GradientSummary()
    copy.CopyFrom(summary)
    return CORRUPTIONS[name][0](copy)
