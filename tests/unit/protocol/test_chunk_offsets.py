"""protocol/chunk_offsets.py: gap-coded offsets against hand-computed bytes, round trips, and a
peer's arbitrary bytes (always a verdict, never an exception or an offset outside its chunk)."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from swarmnode.protocol.chunk_offsets import chunk_entry_counts, encode_gaps, gap_low_bits, gap_offsets


def test_low_bits_follow_the_mean_gap():
    assert gap_low_bits(16, 3) == 2  # 16 // 3 = 5 -> floor(log2 5) = 2
    assert gap_low_bits(4096, 82) == 5  # 2% density: 49 -> 5
    assert gap_low_bits(4096, 4096) == 0
    assert gap_low_bits(4, 3) == 0  # 4 // 3 = 1
    assert gap_low_bits(65536, 1) == 16


def test_one_chunk_coded_by_hand():
    # Chunk of 16 keeping 3: L = 2. Offsets 1, 6, 15 -> gaps 1, 4, 8 -> low parts 1, 0, 0 and
    # high parts 0, 1, 2. Low bits, little end first: 1 0 | 0 0 | 0 0 -> 0x01. Unary: "1", "01",
    # "001" -> bits 1 0 1 0 0 1 -> 0b00100101.
    counts = np.array([3])
    data = encode_gaps(np.array([1, 6, 15]), counts, 2)
    assert data == bytes([0x01, 0b00100101])
    assert gap_offsets(data, counts, np.array([16]), 2).tolist() == [1, 6, 15]


def test_chunks_restart_their_gaps():
    # Two chunks of 8 keeping 2 (L = 2): [0, 7] and [3, 4]; gaps 0, 6 | 3, 0.
    counts, lengths = np.array([2, 2]), np.array([8, 8])
    data = encode_gaps(np.array([0, 7, 3, 4]), counts, 2)
    # low: 0 -> 00, 6 -> 01 (6 = 0b110: low bits 0, 1), 3 -> 11, 0 -> 00: bits 0 0 0 1 1 1 0 0
    # unary: 0 -> 1, 6 >> 2 = 1 -> 01, 0 -> 1, 0 -> 1: bits 1 0 1 1 1
    assert data == bytes([0b00111000, 0b00011101])
    assert gap_offsets(data, counts, lengths, 2).tolist() == [0, 7, 3, 4]


def test_offsets_must_ascend_within_a_chunk():
    try:
        encode_gaps(np.array([5, 2]), np.array([2]), 1)
    except ValueError:
        return
    raise AssertionError("descending offsets were coded")


def test_what_a_peer_cannot_send():
    counts, lengths = np.array([3]), np.array([16])
    good = encode_gaps(np.array([1, 6, 15]), counts, 2)
    assert "gap ends" in gap_offsets(bytes([0x01, 0b00000101]), counts, lengths, 2)  # two closing bits for three
    assert "beyond its chunk" in gap_offsets(bytes([0x03, 0b01000011]), counts, lengths, 2)  # gaps 3, 0, 16: 21
    assert "index bytes" in gap_offsets(good + b"\x00", counts, lengths, 2)  # a byte no entry needs
    assert "index bytes" in gap_offsets(good[:1], counts, lengths, 2)


@st.composite
def _tensor(draw):
    chunk_size = draw(st.integers(1, 300))
    per_chunk = draw(st.integers(1, chunk_size))
    numel = draw(st.integers(1, 3 * chunk_size + 7))
    counts = chunk_entry_counts(numel, chunk_size, per_chunk)
    lengths = np.minimum(chunk_size, numel - chunk_size * np.arange(len(counts)))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([np.sort(rng.choice(n, k, replace=False)) for n, k in zip(lengths, counts)])
    return chunk_size, per_chunk, counts, lengths, offsets


@settings(max_examples=200, deadline=None)
@given(_tensor())
def test_every_tensor_round_trips_in_about_low_bits_plus_two_bits_an_entry(tensor):
    chunk_size, per_chunk, counts, lengths, offsets = tensor
    low_bits = gap_low_bits(chunk_size, per_chunk)
    data = encode_gaps(offsets, counts, low_bits)
    assert gap_offsets(data, counts, lengths, low_bits).tolist() == offsets.tolist()
    # Each entry: L low bits, its closing bit, and its high part; the high parts of a chunk add
    # up to at most its length >> L. Plus a partial byte per stream.
    assert 8 * len(data) <= len(offsets) * (low_bits + 1) + int((lengths >> low_bits).sum()) + 16


@settings(max_examples=300, deadline=None)
@given(_tensor(), st.binary(max_size=64))
def test_arbitrary_bytes_get_a_verdict_and_never_an_offset_outside_its_chunk(tensor, data):
    chunk_size, per_chunk, counts, lengths, _ = tensor
    decoded = gap_offsets(data, counts, lengths, gap_low_bits(chunk_size, per_chunk))
    if isinstance(decoded, str):
        return
    assert len(decoded) == counts.sum()
    for chunk in np.split(decoded, np.cumsum(counts)[:-1]):
        assert (np.diff(chunk) > 0).all()
    assert (decoded >= 0).all() and (decoded < np.repeat(lengths, counts)).all()
