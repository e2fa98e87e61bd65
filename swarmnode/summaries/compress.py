"""Chunked top-k compression of a pseudo-gradient, with low-bit values and error feedback.

SparseLoCo's scheme (RESEARCH.md): each tensor is flattened and cut into chunks of
`chunk_size` elements; each chunk keeps its `per_chunk` largest-magnitude entries, sent as a
uint16 offset within the chunk and a `bits`-bit code against one float16 scale per chunk
(the chunk's largest kept magnitude). Code q of b bits stands for

    value(q) = scale * (2q + 1 - 2^b) / (2^b - 1),      q in 0 .. 2^b - 1

(for b = 2: -s, -s/3, +s/3, +s). Error feedback: the sender compresses e = delta + residual
and keeps residual' = e - decode(sent), so what one summary leaves out is carried into the
next, never dropped.

Bytes per kept entry: 2 (offset) + b/8 (code), plus 2 per chunk for the scale: at 2% density
and 2 bits, about 89x fewer bytes than the dense fp32 delta.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

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


def chunk_counts(numel: int, chunk_size: int, per_chunk: int) -> np.ndarray:
    """Entries sent by each chunk of a numel-element tensor: min(per_chunk, chunk length)."""
    n_chunks = math.ceil(numel / chunk_size)
    lengths = np.full(n_chunks, chunk_size, dtype=np.int64)
    lengths[-1] = numel - chunk_size * (n_chunks - 1)
    return np.minimum(lengths, per_chunk)


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


def _select(flat: Tensor, chunk_size: int, per_chunk: int) -> tuple[Tensor, Tensor]:
    """(chunk of each kept entry, its offset in the chunk), chunk by chunk: each chunk's
    min(per_chunk, length) largest magnitudes."""
    numel = flat.numel()
    n_chunks = math.ceil(numel / chunk_size)
    magnitude = torch.full((n_chunks * chunk_size,), -1.0, dtype=torch.float32)  # padding never wins
    magnitude[:numel] = flat.abs()
    k = min(per_chunk, chunk_size)
    offsets = magnitude.view(n_chunks, chunk_size).topk(k, dim=1).indices  # [n_chunks, k]
    counts = torch.from_numpy(chunk_counts(numel, chunk_size, per_chunk))
    keep = torch.arange(k)[None, :] < counts[:, None]  # the last, short chunk keeps fewer
    chunks = torch.arange(n_chunks)[:, None].expand(-1, k)
    return chunks[keep], offsets[keep]


def compress_tensor(name: str, value: Tensor, config: CompressionConfig) -> tuple[pb.CompressedTensor, Tensor]:
    """One tensor's CompressedTensor, and the dense fp32 tensor it decodes to."""
    flat = value.detach().reshape(-1).to(torch.float32).cpu()
    chunks, offsets = _select(flat, config.chunk_size, config.per_chunk)
    positions = chunks * config.chunk_size + offsets
    kept = flat[positions]
    n_chunks = math.ceil(flat.numel() / config.chunk_size)
    scales = torch.zeros(n_chunks, dtype=torch.float32).scatter_reduce(0, chunks, kept.abs(), reduce="amax")
    scales = scales.to(torch.float16).to(torch.float32)  # what the receiver will see
    codes = quantize(kept, scales[chunks], config.bits)
    decoded = torch.zeros_like(flat)
    decoded[positions] = dequantize(codes, scales[chunks], config.bits)
    message = pb.CompressedTensor(
        name=name, shape=list(value.shape), indices=offsets.numpy().astype("<u2").tobytes(),
        values=pack_codes(codes.numpy(), config.bits), value_dtype=VALUE_DTYPE_OF_BITS[config.bits],
        scales=scales.numpy().astype("<f2").tobytes(),
    )
    return message, decoded.view(value.shape)


def compress(delta: dict[str, Tensor], residual: dict[str, Tensor], config: CompressionConfig
             ) -> tuple[list[pb.CompressedTensor], dict[str, Tensor], dict[str, Tensor]]:
    """Error-feedback compression of a pseudo-gradient.

        e = delta + residual;  sent = C(e);  residual' = e - decode(sent)

    Returns (compressed tensors, the dense tensors they decode to, residual')."""
    tensors, sent, new_residual = [], {}, {}
    for name in sorted(delta):
        e = delta[name].detach().to(torch.float32).cpu()
        if name in residual:
            e = e + residual[name]
        message, decoded = compress_tensor(name, e, config)
        tensors.append(message)
        sent[name] = decoded
        new_residual[name] = e - decoded
    return tensors, sent, new_residual


def decode_tensor(t: pb.CompressedTensor, chunk_size: int, per_chunk: int) -> Tensor:
    """The dense fp32 tensor a structurally checked (protocol.limits) CompressedTensor stands for."""
    numel = math.prod(t.shape)
    counts = chunk_counts(numel, chunk_size, per_chunk)
    chunks = np.repeat(np.arange(len(counts)), counts)
    offsets = np.frombuffer(t.indices, dtype="<u2").astype(np.int64)
    bits = BITS_OF_VALUE_DTYPE[t.value_dtype]
    codes = torch.from_numpy(unpack_codes(t.values, bits, len(offsets)))
    scales = torch.from_numpy(np.frombuffer(t.scales, dtype="<f2").astype(np.float32))
    chunk_ids = torch.from_numpy(chunks)
    flat = torch.zeros(numel, dtype=torch.float32)
    flat[chunk_ids * chunk_size + torch.from_numpy(offsets)] = dequantize(codes, scales[chunk_ids], bits)
    return flat.view(*t.shape)


def dense_bytes(shapes: dict[str, tuple[int, ...]]) -> int:
    """Bytes of the dense fp32 delta: 4 per parameter."""
    return 4 * sum(math.prod(s) for s in shapes.values())
