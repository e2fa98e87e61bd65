"""A peer's gradient summary, checked against this node's own model before anything is merged.

`protocol.limits` has already checked the message's structure (lengths, offsets inside their
chunks, code widths). Here: the base it was trained from, tensor names, shapes and dtypes
against this node's parameters, finite values, and a norm bound relative to what this node
itself sends. A summary that passes decodes to finite dense tensors of this model's shapes.
"""
from __future__ import annotations

import math

import torch
from torch import Tensor

from swarmnode.protocol.codec import Rejected, RejectReason
from swarmnode.protocol.generated import gradient_summary_pb2 as pb
from swarmnode.protocol.limits import CHUNKED_SCHEMES
from swarmnode.summaries.compress import BITS_OF_VALUE_DTYPE, decode_tensor
from swarmnode.summaries.outer import global_norm


# Own summaries a node sends before it judges peers' norms. One is too few: a summary whose steps
# mostly met groups without any reward spread (no gradient) can be 10x under the usual (0.0098
# against ~0.13 on the bundled policy), and its bound refused an honest peer's summary.
OWN_NORMS_TO_JUDGE = 3


def norm_bound(own_norms: list[float], ratio: float) -> float | None:
    """The largest summary norm this node accepts: ratio x max(own recent summaries' norms),
    once it has sent OWN_NORMS_TO_JUDGE of its own (None before: too little to judge against)."""
    return ratio * max(own_norms) if len(own_norms) >= OWN_NORMS_TO_JUDGE else None


def check_summary(summary: pb.GradientSummary, *, sender: str, base_fingerprint: str,
                  shapes: dict[str, tuple[int, ...]], max_norm: float) -> tuple[dict[str, Tensor], float]:
    """Decode a structurally valid summary into dense fp32 tensors, or raise `Rejected`
    (naming `sender`, a verified peer id): wrong_base, bad_tensor, non_finite, norm_too_large.
    Returns (tensors, global L2 norm)."""
    def reject(reason: RejectReason, detail: str) -> Rejected:
        return Rejected(reason, detail, sender)

    if summary.base_fingerprint != base_fingerprint:
        raise reject(RejectReason.WRONG_BASE, f"base {summary.base_fingerprint[:32]!r}, this node's is {base_fingerprint!r}")
    if summary.scheme not in CHUNKED_SCHEMES:
        raise reject(RejectReason.BAD_TENSOR, f"compression scheme {summary.scheme} is not chunked top-k")
    gaps = summary.scheme == pb.COMPRESSION_SCHEME_CHUNKED_TOPK_GAPS
    names = [t.name for t in summary.tensors]
    if len(names) != len(set(names)) or set(names) != set(shapes):
        missing, extra = set(shapes) - set(names), set(names) - set(shapes)
        raise reject(RejectReason.BAD_TENSOR, f"tensor names differ ({len(missing)} missing, {len(extra)} unknown, "
                                              f"{len(names) - len(set(names))} repeated)")
    decoded = {}
    for t in summary.tensors:
        if tuple(t.shape) != tuple(shapes[t.name]):
            raise reject(RejectReason.BAD_TENSOR, f"{t.name}: shape {tuple(t.shape)}, expected {tuple(shapes[t.name])}")
        if t.value_dtype not in BITS_OF_VALUE_DTYPE:
            raise reject(RejectReason.BAD_TENSOR, f"{t.name}: value dtype {t.value_dtype} is not a chunked code")
        value = decode_tensor(t, summary.chunk_size, summary.per_chunk, gaps=gaps)
        if not bool(torch.isfinite(value).all()):
            raise reject(RejectReason.NON_FINITE, f"{t.name}: NaN or Inf")
        decoded[t.name] = value
    norm = global_norm(decoded)
    if not math.isfinite(norm):  # finite values whose squares overflow
        raise reject(RejectReason.NON_FINITE, "norm overflows")
    if norm > max_norm:
        raise reject(RejectReason.NORM_TOO_LARGE, f"norm {norm:.3g} over this node's bound {max_norm:.3g}")
    return decoded, norm
