"""A chunked top-k tensor's offsets on the wire: uint16 each, or gap-coded (pure functions, numpy).

Each chunk of `chunk_size` elements sends k = min(per_chunk, chunk length) distinct offsets.
COMPRESSION_SCHEME_CHUNKED_TOPK writes them as uint16 little-endian, 16 bits an entry.
COMPRESSION_SCHEME_CHUNKED_TOPK_GAPS writes each chunk's offsets ascending as gaps

    g_0 = o_0,   g_j = o_j - o_(j-1) - 1   (>= 0: offsets are distinct)

each split at L = floor(log2(chunk_size // per_chunk)) bits (a Rice code with the separate
streams of Elias-Fano): the low L bits of every gap packed first (little end first, ceil(n L / 8)
bytes), then the high parts q = g >> L in unary, each as q zero bits and a closing one bit,
packed the same way and padded with zeros to a whole byte. Top-k offsets of a chunk are spread
about evenly, so the mean gap is about chunk_size / per_chunk and an entry costs about
L + 2 bits: 7.5 at 2% density, against 16.

A peer's bytes are checked whole before any offset is trusted (`gap_offsets`): exactly n closing
bits, no bits after the last byte they need, every offset inside its chunk.
"""
from __future__ import annotations

import math

import numpy as np


def gap_low_bits(chunk_size: int, per_chunk: int) -> int:
    """L = floor(log2(chunk_size // per_chunk)), 0 when a chunk keeps over half its entries."""
    return max(0, int(math.log2(max(1, chunk_size // max(1, per_chunk)))))


def chunk_lengths(numel: int, chunk_size: int) -> np.ndarray:
    """Elements in each chunk of a numel-element tensor: chunk_size, the last one what is left."""
    n_chunks = math.ceil(numel / chunk_size)
    lengths = np.full(n_chunks, chunk_size, dtype=np.int64)
    lengths[-1] = numel - chunk_size * (n_chunks - 1)
    return lengths


def chunk_entry_counts(numel: int, chunk_size: int, per_chunk: int) -> np.ndarray:
    """Offsets sent by each chunk of a numel-element tensor: min(per_chunk, chunk length)."""
    return np.minimum(chunk_lengths(numel, chunk_size), per_chunk)


def _pack_bits(bits: np.ndarray) -> bytes:
    return np.packbits(bits.astype(np.uint8), bitorder="little").tobytes()


def _starts(counts: np.ndarray) -> np.ndarray:
    """Index of each chunk's first entry among all entries."""
    return np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)


def _unpack_fixed(raw: np.ndarray, n: int, width: int) -> np.ndarray:
    """n unsigned `width`-bit fields (width <= 16) packed little end first: each read from the
    three bytes its bit position starts in."""
    position = np.arange(n, dtype=np.int64) * width
    padded = np.concatenate([raw, np.zeros(3, dtype=np.uint8)]).astype(np.int64)
    byte, shift = position >> 3, position & 7
    window = padded[byte] | (padded[byte + 1] << 8) | (padded[byte + 2] << 16)
    return (window >> shift) & ((1 << width) - 1)


def encode_gaps(offsets: np.ndarray, counts: np.ndarray, low_bits: int) -> bytes:
    """The gap coding of `offsets`: chunk after chunk, `counts[c]` entries each, ascending within
    a chunk (ValueError otherwise: the values sent beside them follow the same order)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    if len(offsets) == 0:
        return b""
    first = np.zeros(len(offsets), dtype=bool)
    first[_starts(counts)] = True
    previous = np.concatenate([[-1], offsets[:-1]])
    gaps = np.where(first, offsets, offsets - previous - 1)
    if (gaps < 0).any():
        raise ValueError("offsets must be distinct and ascending within each chunk")
    low = np.empty((len(gaps), low_bits), dtype=np.uint8)  # one bit plane at a time: n x L bytes
    for b in range(low_bits):
        low[:, b] = (gaps >> b) & 1
    high = gaps >> low_bits
    unary = np.zeros(int(high.sum()) + len(gaps), dtype=np.uint8)
    unary[np.cumsum(high + 1) - 1] = 1
    return _pack_bits(low.reshape(-1)) + _pack_bits(unary)


def gap_offsets(data: bytes, counts: np.ndarray, chunk_lengths: np.ndarray, low_bits: int) -> np.ndarray | str:
    """The offsets (ascending within each chunk) that gap-coded `data` stands for, or what is wrong
    with it: the wrong number of closing bits, bytes beyond the last one needed, an offset
    beyond its chunk."""
    n = int(counts.sum())
    low_len = (n * low_bits + 7) // 8
    # A chunk's gaps add up to at most its length - k, so its high parts to at most that >> L.
    most_unary = n + int(((chunk_lengths - counts) >> low_bits).sum())
    if not low_len + (n + 7) // 8 <= len(data) <= low_len + (most_unary + 7) // 8:
        return f"{len(data)} index bytes for {n} gap-coded entries"
    raw = np.frombuffer(data, dtype=np.uint8)
    low = _unpack_fixed(raw[:low_len], n, low_bits)
    ones = np.flatnonzero(np.unpackbits(raw[low_len:], bitorder="little"))
    if len(ones) != n:
        return f"{len(ones)} gap ends for {n} entries"
    if n and len(data) - low_len != int(ones[-1]) // 8 + 1:
        return "bytes after the last gap"
    high = np.diff(ones, prepend=-1) - 1
    steps = ((high << low_bits) | low) + 1  # o_j - o_(j-1), with o_(-1) = -1 in each chunk
    running = np.cumsum(steps)
    starts = _starts(counts)
    before = np.where(starts > 0, running[np.maximum(starts - 1, 0)], 0)
    offsets = running - np.repeat(before, counts) - 1
    if n and (offsets > np.repeat(chunk_lengths - 1, counts)).any():
        return "an offset is beyond its chunk"
    return offsets


def tensor_gap_offsets(data: bytes, numel: int, chunk_size: int, per_chunk: int) -> np.ndarray | str:
    """gap_offsets for the `indices` of a numel-element tensor sent in chunks of chunk_size
    keeping per_chunk each."""
    return gap_offsets(data, chunk_entry_counts(numel, chunk_size, per_chunk), chunk_lengths(numel, chunk_size),
                       gap_low_bits(chunk_size, per_chunk))
