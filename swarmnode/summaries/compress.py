"""Chunked top-k compression of a pseudo-gradient, with low-bit values and error feedback.

SparseLoCo's scheme: each tensor is flattened and cut into chunks of
`chunk_size` elements; each chunk keeps its `per_chunk` largest-magnitude entries, ascending by
offset, sent as an offset within the chunk (uint16, or gap-coded: protocol/chunk_offsets.py) and
a `bits`-bit code against one float16 scale per chunk (the chunk's largest kept magnitude).
Code q of b bits stands for

    value(q) = scale * (2q + 1 - 2^b) / (2^b - 1),      q in 0 .. 2^b - 1

(for b = 2: -s, -s/3, +s/3, +s). Error feedback: the sender compresses e = delta + residual
and keeps residual' = e - decode(sent), so what one summary leaves out is carried into the
next, never dropped.

Bytes per kept entry: 2 (uint16 offset) or about (L + 2) / 8 (gap-coded, L = 5 at 2% density),
plus b/8 (code), plus 2 per chunk for the scale.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from swarmnode.protocol.chunk_offsets import (
    chunk_entry_counts,
    chunk_lengths,
    encode_gaps,
    gap_low_bits,
    tensor_gap_offsets,
)
from swarmnode.protocol.generated import gradient_summary_pb2 as pb

VALUE_DTYPE_OF_BITS = {2: pb.VALUE_DTYPE_INT2, 4: pb.VALUE_DTYPE_INT4, 8: pb.VALUE_DTYPE_INT8}
BITS_OF_VALUE_DTYPE = {v: k for k, v in VALUE_DTYPE_OF_BITS.items()}


@dataclass(frozen=True)
class CompressionConfig:
    density: float = 0.02
    bits: int = 2
    chunk_size: int = 4096

    @property
    def per_chunk(self) -> int:
        """Entries kept per full chunk: round(density * chunk_size), at least 1."""
        return max(1, round(self.density * self.chunk_size))


def quantize(values: Tensor, scale: Tensor, bits: int) -> Tensor:
    """Codes q = round(((v / s) (L - 1) + L - 1) / 2), clamped to 0..L-1, L = 2^bits
    (the inverse of `dequantize`; a zero scale gives the middle code)."""
    levels = 2**bits
    ratio = torch.where(scale > 0, values / scale.clamp_min(1e-30), torch.zeros_like(values))
    return torch.round((ratio * (levels - 1) + levels - 1) / 2).clamp(0, levels - 1).to(torch.int64)


def dequantize(codes: Tensor, scale: Tensor, bits: int) -> Tensor:
    """value = scale * (2q + 1 - L) / (L - 1), L = 2^bits."""
    levels = 2**bits
    return scale * (2 * codes.to(torch.float32) + 1 - levels) / (levels - 1)


def pack_codes(codes: np.ndarray, bits: int) -> bytes:
    """Unsigned `bits`-bit codes, 8/bits to a byte, the first in the lowest bits."""
    if bits == 8:
        return codes.astype(np.uint8).tobytes()
    per_byte = 8 // bits
    padded = np.zeros(math.ceil(len(codes) / per_byte) * per_byte, dtype=np.uint8)
    padded[:len(codes)] = codes
    shifts = (np.arange(per_byte, dtype=np.uint8) * bits)
    return np.bitwise_or.reduce(padded.reshape(-1, per_byte) << shifts, axis=1).astype(np.uint8).tobytes()


def unpack_codes(data: bytes, bits: int, count: int) -> np.ndarray:
    raw = np.frombuffer(data, dtype=np.uint8)
    if bits == 8:
        return raw[:count].astype(np.int64)
    per_byte = 8 // bits
    shifts = (np.arange(per_byte, dtype=np.uint8) * bits)
    return ((raw[:, None] >> shifts) & (2**bits - 1)).reshape(-1)[:count].astype(np.int64)


def _chunk_layout(numels: list[int], chunk_size: int, per_chunk: int) -> tuple[np.ndarray, np.ndarray]:
    """For tensors of `numels` elements laid out one after another, each padded to whole chunks:
    (first chunk of each tensor, plus the total at the end; entries kept by each chunk)."""
    n_chunks = [math.ceil(n / chunk_size) for n in numels]
    first = np.concatenate([[0], np.cumsum(n_chunks)]).astype(np.int64)
    counts = np.concatenate([chunk_entry_counts(n, chunk_size, per_chunk) for n in numels])
    return first, counts


def compress(delta: dict[str, Tensor], residual: dict[str, Tensor], config: CompressionConfig
             ) -> tuple[list[pb.CompressedTensor], dict[str, Tensor], dict[str, Tensor]]:
    """Error-feedback compression of a pseudo-gradient.

        e = delta + residual;  sent = C(e);  residual' = e - decode(sent)

    C keeps, in every chunk of every tensor, the min(per_chunk, chunk length) largest |e|,
    coded against the chunk's largest kept magnitude. All tensors go through one top-k: each
    is padded to whole chunks (padding has magnitude -1, so it never wins a place).
    Returns (compressed tensors, the dense tensors they decode to, residual')."""
    names = sorted(delta)
    cs, bits = config.chunk_size, config.bits
    e = [delta[n].detach().reshape(-1).to(torch.float32).cpu() for n in names]
    e = [x + residual[n].reshape(-1) if n in residual else x for n, x in zip(names, e)]
    first, counts = _chunk_layout([x.numel() for x in e], cs, config.per_chunk)
    padded = torch.zeros(int(first[-1]) * cs, dtype=torch.float32)
    magnitude = torch.full_like(padded, -1.0)
    for x, c in zip(e, first[:-1]):
        padded[c * cs:c * cs + x.numel()] = x
        magnitude[c * cs:c * cs + x.numel()] = x.abs()
    k = min(config.per_chunk, cs)
    top, offsets = magnitude.view(-1, cs).topk(k, dim=1)  # [chunks, k], largest first
    scales = top[:, 0].to(torch.float16).to(torch.float32)  # the largest kept |e|, as the receiver sees it
    # Ascending offsets (gap coding needs them; uint16 does not mind). Padding lies past a
    # tensor's elements, so a short last chunk's real entries still come first.
    offsets = torch.sort(offsets, dim=1).values
    keep = torch.arange(k)[None, :] < torch.from_numpy(counts)[:, None]  # short last chunks keep fewer
    chunk_of = torch.arange(len(counts))[:, None].expand(-1, k)[keep]
    offsets = offsets[keep]
    positions = chunk_of * cs + offsets
    codes = quantize(padded[positions], scales[chunk_of], bits)
    decoded_padded = torch.zeros_like(padded)
    decoded_padded[positions] = dequantize(codes, scales[chunk_of], bits)
    # Entries of one chunk are contiguous, so a tensor's entries are one slice.
    entry_first = np.concatenate([[0], np.cumsum(counts)])[first]
    offsets_np, codes_np, scales_np = offsets.numpy().astype("<u2"), codes.numpy(), scales.numpy().astype("<f2")
    tensors, sent, new_residual = [], {}, {}
    for i, (name, x) in enumerate(zip(names, e)):
        a, b = int(entry_first[i]), int(entry_first[i + 1])
        c0, c1 = int(first[i]), int(first[i + 1])
        tensors.append(pb.CompressedTensor(
            name=name, shape=list(delta[name].shape), indices=offsets_np[a:b].tobytes(),
            values=pack_codes(codes_np[a:b], bits), value_dtype=VALUE_DTYPE_OF_BITS[bits],
            scales=scales_np[c0:c1].tobytes()))
        d = decoded_padded[c0 * cs:c0 * cs + x.numel()]
        sent[name] = d.view(delta[name].shape)
        new_residual[name] = (x - d).view(delta[name].shape)
    return tensors, sent, new_residual


def gap_coded(tensors: list[pb.CompressedTensor], chunk_size: int, per_chunk: int) -> list[pb.CompressedTensor]:
    """`compress`'s tensors (uint16 offsets, ascending in each chunk) with their offsets gap-coded
    (COMPRESSION_SCHEME_CHUNKED_TOPK_GAPS); values and scales unchanged."""
    low_bits = gap_low_bits(chunk_size, per_chunk)
    out = []
    for t in tensors:
        coded = pb.CompressedTensor()
        coded.CopyFrom(t)
        counts = chunk_entry_counts(math.prod(t.shape), chunk_size, per_chunk)
        coded.indices = encode_gaps(np.frombuffer(t.indices, dtype="<u2"), counts, low_bits)
        out.append(coded)
    return out


def chunk_offsets(t: pb.CompressedTensor, chunk_size: int, per_chunk: int, *, gaps: bool) -> np.ndarray:
    """A structurally checked (protocol.limits) tensor's offsets within their chunks, in the order
    of its values: uint16, or gap-coded (`gaps`)."""
    if not gaps:
        return np.frombuffer(t.indices, dtype="<u2").astype(np.int64)
    offsets = tensor_gap_offsets(t.indices, math.prod(t.shape), chunk_size, per_chunk)
    if isinstance(offsets, str):
        raise ValueError(f"tensor {t.name}: {offsets} (not checked by protocol.limits)")
    return offsets


def decode_tensor(t: pb.CompressedTensor, chunk_size: int, per_chunk: int, *, gaps: bool = False) -> Tensor:
    """The dense fp32 tensor a structurally checked (protocol.limits) CompressedTensor stands for
    (offsets gap-coded with `gaps`: COMPRESSION_SCHEME_CHUNKED_TOPK_GAPS)."""
    numel = math.prod(t.shape)
    counts = chunk_entry_counts(numel, chunk_size, per_chunk)
    chunks = np.repeat(np.arange(len(counts)), counts)
    offsets = chunk_offsets(t, chunk_size, per_chunk, gaps=gaps)
    bits = BITS_OF_VALUE_DTYPE[t.value_dtype]
    codes = torch.from_numpy(unpack_codes(t.values, bits, len(offsets)))
    scales = torch.from_numpy(np.frombuffer(t.scales, dtype="<f2").astype(np.float32))
    chunk_ids = torch.from_numpy(chunks)
    flat = torch.zeros(numel, dtype=torch.float32)
    flat[chunk_ids * chunk_size + torch.from_numpy(offsets)] = dequantize(codes, scales[chunk_ids], bits)
    return flat.view(*t.shape)


# Bytes of a GradientSummary's own fields and of each tensor's besides its three byte strings
# (field tags and lengths, shape, dtype): generous, for a bound.
SUMMARY_FIELDS_BYTES = 512
TENSOR_FIELDS_BYTES = 64


def gap_coded_bytes_at_most(shapes: dict[str, tuple[int, ...]], config: CompressionConfig) -> int:
    """The largest a summary of tensors of `shapes` can be with gap-coded offsets: per tensor of
    n entries in chunks of lengths l_c keeping k_c, L = gap_low_bits: ceil(n L / 8) +
    ceil((n + sum((l_c - k_c) >> L)) / 8) index bytes, ceil(n b / 8) value bytes, 2 per chunk,
    its name and TENSOR_FIELDS_BYTES; plus SUMMARY_FIELDS_BYTES."""
    cs, per_chunk, bits = config.chunk_size, config.per_chunk, config.bits
    low_bits = gap_low_bits(cs, per_chunk)
    total = SUMMARY_FIELDS_BYTES
    for name, shape in shapes.items():
        numel = math.prod(shape)
        counts, lengths = chunk_entry_counts(numel, cs, per_chunk), chunk_lengths(numel, cs)
        n = int(counts.sum())
        unary = n + int(((lengths - counts) >> low_bits).sum())
        total += (n * low_bits + 7) // 8 + (unary + 7) // 8 + (n * bits + 7) // 8 + 2 * len(counts)
        total += len(name.encode("utf-8")) + TENSOR_FIELDS_BYTES
    return total


def largest_density_within(shapes: dict[str, tuple[int, ...]], config: CompressionConfig, cap: int) -> float | None:
    """A density whose gap-coded summaries of `shapes` stay within `cap` bytes
    (gap_coded_bytes_at_most), other settings as `config`: k / chunk_size to 3 significant
    digits for the largest entries a chunk k <= config.per_chunk that fits (the bound grows
    with k); None when not even k = 1 fits."""
    def density(k: int) -> float:
        return float(f"{k / config.chunk_size:.3g}")

    def fits(k: int) -> bool:
        return gap_coded_bytes_at_most(shapes, CompressionConfig(density(k), config.bits, config.chunk_size)) <= cap

    low, high = 0, config.per_chunk  # fits(low) (or low = 0: none yet); the answer is in low..high
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if fits(middle) else (low, middle - 1)
    return density(low) if low else None


def dense_bytes(shapes: dict[str, tuple[int, ...]]) -> int:
    """Bytes of the dense fp32 delta: 4 per parameter."""
    return 4 * sum(math.prod(s) for s in shapes.values())
