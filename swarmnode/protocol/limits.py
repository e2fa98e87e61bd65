"""Structural limits and value ranges of each wire message, checked after decoding and before any use.

Each check returns None when the message is within the schema's limits, or a short
description of the first problem: `check_structure` (shapes, lengths, finite floats; a
failure is INVALID_FIELD) and `check_ranges` (every integer and float against this node's
own bounds; a failure is OUT_OF_RANGE) dispatch to each message type's
`check_<message>_structure` and `check_<message>_ranges`. No check needs context (time,
swarm, peer table); those belong to the code that acts on a message (e.g.
`peer_record.check_peer_record`, which opens a record's envelope and runs both).
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
from google.protobuf.message import Message

from swarmnode.protocol.chunk_offsets import tensor_gap_offsets
from swarmnode.protocol.generated import gradient_summary_pb2, peer_record_pb2, rollout_batch_pb2

MAX_PEER_ID_CHARS = 128
MAX_MULTIADDRS = 16
MAX_MULTIADDR_CHARS = 256
MAX_SHORT_STRING_CHARS = 128
MAX_RELAYS = 4  # relays a node names in its record
MAX_WINDOW_S = 86_400.0  # a record's swarm.window_s (0: an older node's, unknown)

MAX_GROUPS_PER_BATCH = 256
MAX_COMPLETIONS_PER_GROUP = 64
MAX_PROMPT_CHARS = 16_384
MAX_COMPLETION_CHARS = 16_384
MAX_COMPLETION_TOKENS = 8_192

MAX_TENSORS_PER_SUMMARY = 4_096
MAX_TENSOR_DIMS = 8
MAX_TENSOR_ELEMENTS = 2**31  # one parameter tensor; larger shapes are garbage (and int32-indexable below)
MAX_CHUNK_SIZE = 65_536  # chunked top-k offsets are uint16
# Entries sent and bytes spent are bounded by the body cap (codec.MAX_BODY_BYTES, ~4 MiB):
# every length below is computed from the header and compared before any bytes are decoded.

# Every wire integer (ids, versions, windows, task seeds and indices) must be below 2^53: it
# then fits SQLite's signed 64-bit INTEGER, JSON and a float64 exactly. uint64 on the wire
# would otherwise let a peer send 2^63 and fail the insert after the groups were taken.
MAX_WIRE_INT = 2**53 - 1
MAX_TIMESTAMP = 1e11  # seconds since the epoch (year 5138): larger "times" are garbage
MIN_LOGPROB = -1e4  # a sampled token's log-prob below this is not a probability anyone sampled at
MAX_ABS_REWARD = 1e6
MAX_TEMPERATURE = 100.0
MAX_CAPABILITY = 1e15  # GFLOP/s
# A peer's measured speeds will steer what this node plans, so each has a cap beyond any honest
# node (a whole GPU cluster samples ~1e7 tokens/s; no swarm waits 1e6 s, 11.6 days, for a step).
# Over its cap a record is OUT_OF_RANGE; NaN, infinities and negatives are INVALID_FIELD.
CAPABILITY_CAPS = {
    "matmul_gflops": MAX_CAPABILITY,
    "generate_tokens_per_s": 1e9,
    "train_tokens_per_s": 1e9,
    "train_samples_per_s": 1e8,
    "seconds_per_step": 1e6,
}

_VALUE_BYTES = {
    gradient_summary_pb2.VALUE_DTYPE_FLOAT32: 4,
    gradient_summary_pb2.VALUE_DTYPE_FLOAT16: 2,
    gradient_summary_pb2.VALUE_DTYPE_BFLOAT16: 2,
    gradient_summary_pb2.VALUE_DTYPE_INT8: 1,
}
# Bits per code of chunked top-k values (INT2 / INT4 only valid there).
_CODE_BITS = {
    gradient_summary_pb2.VALUE_DTYPE_INT2: 2,
    gradient_summary_pb2.VALUE_DTYPE_INT4: 4,
    gradient_summary_pb2.VALUE_DTYPE_INT8: 8,
}
# Chunked top-k, its offsets as uint16 or gap-coded (swarmnode/protocol/chunk_offsets.py).
CHUNKED_SCHEMES = (gradient_summary_pb2.COMPRESSION_SCHEME_CHUNKED_TOPK,
                   gradient_summary_pb2.COMPRESSION_SCHEME_CHUNKED_TOPK_GAPS)
_SCHEMES = (gradient_summary_pb2.COMPRESSION_SCHEME_DENSE, gradient_summary_pb2.COMPRESSION_SCHEME_TOPK,
            *CHUNKED_SCHEMES)


def _finite(x: float) -> bool:
    return math.isfinite(x)


def check_peer_record_structure(record: peer_record_pb2.PeerRecord) -> str | None:
    if not 0 < len(record.peer_id) <= MAX_PEER_ID_CHARS:
        return "peer_id missing or too long"
    if len(record.public_key) != 32:
        return "public_key must be 32 bytes"
    if len(record.peer_id_binding) != 64:
        return "peer_id_binding must be 64 bytes"
    if len(record.multiaddrs) > MAX_MULTIADDRS:
        return f"more than {MAX_MULTIADDRS} multiaddrs"
    if any(len(m) > MAX_MULTIADDR_CHARS or not m.startswith("/") for m in record.multiaddrs):
        return "a multiaddr is malformed or too long"
    short = (record.software_version, record.swarm, record.model_fingerprint, record.base_fingerprint,
             record.device.kind, record.device.name)
    if any(len(s) > MAX_SHORT_STRING_CHARS for s in short):
        return "a string field is too long"
    if not record.swarm:
        return "swarm missing"
    numbers = (record.timestamp, record.expires_at, record.window_s,
               *(getattr(record.capability, k) for k in CAPABILITY_CAPS))
    if not all(_finite(x) and x >= 0 for x in numbers):
        return "a time, the window or a capability is negative or not finite"
    if record.expires_at <= record.timestamp:
        return "expires_at must be after timestamp"
    if record.state not in peer_record_pb2.NodeState.values():
        return f"unknown state {record.state}"
    if record.reachability not in peer_record_pb2.Reachability.values():
        return f"unknown reachability {record.reachability}"
    if len(record.relays) > MAX_RELAYS or any(not 0 < len(r) <= MAX_PEER_ID_CHARS for r in record.relays):
        return f"more than {MAX_RELAYS} relays, or a relay id missing or too long"
    return None


def check_rollout_batch_structure(batch: rollout_batch_pb2.RolloutBatch) -> str | None:
    if not 0 < len(batch.groups) <= MAX_GROUPS_PER_BATCH:
        return f"a batch holds 1..{MAX_GROUPS_PER_BATCH} groups"
    if len(batch.model_fingerprint) > MAX_SHORT_STRING_CHARS or len(batch.tokenizer_fingerprint) > MAX_SHORT_STRING_CHARS:
        return "a fingerprint is too long"
    if not (_finite(batch.created_at) and _finite(batch.temperature) and _finite(batch.top_p)):
        return "created_at, temperature and top_p must be finite"
    for group in batch.groups:
        if not group.task.task or len(group.task.task) > MAX_SHORT_STRING_CHARS:
            return "task name missing or too long"
        if len(group.prompt) > MAX_PROMPT_CHARS:
            return "prompt too long"
        if not 0 < len(group.completions) <= MAX_COMPLETIONS_PER_GROUP:
            return f"a group holds 1..{MAX_COMPLETIONS_PER_GROUP} completions"
        for c in group.completions:
            if len(c.text) > MAX_COMPLETION_CHARS or len(c.token_ids) > MAX_COMPLETION_TOKENS:
                return "completion too long"
            if c.logprobs and len(c.logprobs) != len(c.token_ids):
                return "logprobs and token_ids differ in length"
            if not all(_finite(lp) and lp <= 0.0 for lp in c.logprobs):
                return "a log-prob is positive or not finite"
            if not _finite(c.reported_reward) or len(c.finish_reason) > 32:
                return "reported_reward not finite or finish_reason too long"
    return None


def check_rollout_announcement_structure(announcement: rollout_batch_pb2.RolloutAnnouncement) -> str | None:
    if not 0 < len(announcement.peer_id) <= MAX_PEER_ID_CHARS:
        return "peer_id missing or too long"
    if len(announcement.peer_id_binding) != 64:
        return "peer_id_binding must be 64 bytes"
    if len(announcement.model_fingerprint) > MAX_SHORT_STRING_CHARS:
        return "model_fingerprint too long"
    if announcement.last_batch_id < announcement.first_batch_id:
        return "last_batch_id before first_batch_id"
    if not all(_finite(x) and x >= 0 for x in (announcement.timestamp, announcement.expires_at)):
        return "a time is negative or not finite"
    if announcement.expires_at <= announcement.timestamp:
        return "expires_at must be after timestamp"
    return None


def _chunked_topk_problem(t: gradient_summary_pb2.CompressedTensor, numel: int, chunk_size: int,
                          per_chunk: int, gaps: bool) -> str | None:
    """Lengths and offsets of one chunked top-k tensor (uint16 offsets, or gap-coded with `gaps`:
    COMPRESSION_SCHEME_CHUNKED_TOPK_GAPS), as the .proto lays them out.

    Every length follows from shape, chunk_size and per_chunk, so they are compared before
    anything is decoded; offsets are then checked with numpy, never entry by entry.
    """
    full, rest = divmod(numel, chunk_size)
    k = min(per_chunk, chunk_size)  # entries of each full chunk
    k_last = min(per_chunk, rest)  # entries of the shorter last chunk (none when rest == 0)
    n_chunks = full + (1 if rest else 0)
    count = full * k + k_last
    bits = _CODE_BITS.get(t.value_dtype)
    if bits is None:
        return f"tensor {t.name}: value dtype {t.value_dtype} is not a chunked-top-k code (INT2, INT4, INT8)"
    if not gaps and len(t.indices) != 2 * count:
        return f"tensor {t.name}: {len(t.indices)} index bytes for {count} entries"
    if len(t.values) != (count * bits + 7) // 8:
        return f"tensor {t.name}: {len(t.values)} value bytes for {count} {bits}-bit codes"
    if len(t.scales) != 2 * n_chunks:
        return f"tensor {t.name}: {len(t.scales)} scale bytes for {n_chunks} chunks"
    if gaps:
        # Ascending within each chunk and inside it by construction, or not decoded at all.
        decoded = tensor_gap_offsets(t.indices, numel, chunk_size, per_chunk)
        return f"tensor {t.name}: {decoded}" if isinstance(decoded, str) else None
    offsets = np.frombuffer(t.indices, dtype="<u2")
    head = offsets[: full * k].reshape(full, k)
    tail = offsets[full * k:]
    if (head.size and int(head.max()) >= chunk_size) or (tail.size and int(tail.max()) >= rest):
        return f"tensor {t.name}: an offset is beyond its chunk"
    # Top-k entries are distinct: a repeated offset would count one entry several times.
    if k > 1 and head.size and not (np.diff(np.sort(head, axis=1), axis=1) > 0).all():
        return f"tensor {t.name}: an offset repeats within a chunk"
    if k_last > 1 and not (np.diff(np.sort(tail)) > 0).all():
        return f"tensor {t.name}: an offset repeats within the last chunk"
    return None


def check_gradient_summary_structure(summary: gradient_summary_pb2.GradientSummary) -> str | None:
    if not summary.model_fingerprint or len(summary.model_fingerprint) > MAX_SHORT_STRING_CHARS:
        return "model_fingerprint missing or too long"
    if not summary.base_fingerprint or len(summary.base_fingerprint) > MAX_SHORT_STRING_CHARS:
        return "base_fingerprint missing or too long"
    if summary.step_end < summary.step_start:
        return "step_end before step_start"
    if summary.scheme not in _SCHEMES:
        return f"unknown compression scheme {summary.scheme}"
    chunked = summary.scheme in CHUNKED_SCHEMES
    if chunked and not (0 < summary.chunk_size <= MAX_CHUNK_SIZE and 0 < summary.per_chunk <= summary.chunk_size):
        return f"chunk_size {summary.chunk_size} / per_chunk {summary.per_chunk} outside 1..{MAX_CHUNK_SIZE} / 1..chunk_size"
    if not 0 < len(summary.tensors) <= MAX_TENSORS_PER_SUMMARY:
        return f"a summary holds 1..{MAX_TENSORS_PER_SUMMARY} tensors"
    if len({t.name for t in summary.tensors}) != len(summary.tensors):
        return "a tensor name repeats"
    if not _finite(summary.created_at):
        return "created_at not finite"
    for t in summary.tensors:
        if not t.name or len(t.name) > 256 or len(t.shape) > MAX_TENSOR_DIMS:
            return "tensor name or shape malformed"
        numel = math.prod(t.shape)
        if not 0 < numel <= MAX_TENSOR_ELEMENTS:
            return f"tensor {t.name}: {numel} elements, outside 1..2^31"
        if not _finite(t.scale):
            return f"tensor {t.name}: scale not finite"
        if chunked:
            problem = _chunked_topk_problem(t, numel, summary.chunk_size, summary.per_chunk,
                                            summary.scheme == gradient_summary_pb2.COMPRESSION_SCHEME_CHUNKED_TOPK_GAPS)
            if problem:
                return problem
            continue
        width = _VALUE_BYTES.get(t.value_dtype)
        if width is None:
            return f"unknown value dtype {t.value_dtype} (INT2 and INT4 need COMPRESSION_SCHEME_CHUNKED_TOPK)"
        count, rest = divmod(len(t.values), width)
        if rest:
            return f"tensor {t.name}: values not a whole number of elements"
        if summary.scheme == gradient_summary_pb2.COMPRESSION_SCHEME_DENSE and count != numel:
            return f"tensor {t.name}: {count} values for {numel} elements"
        if summary.scheme == gradient_summary_pb2.COMPRESSION_SCHEME_TOPK:
            if len(t.indices) != 4 * count or count > numel:
                return f"tensor {t.name}: indices do not match values"
            if count and int(np.frombuffer(t.indices, dtype="<u4").max()) >= numel:
                return f"tensor {t.name}: an index is out of range"
    return None


def check_summary_announcement_structure(announcement: gradient_summary_pb2.SummaryAnnouncement) -> str | None:
    if not 0 < len(announcement.peer_id) <= MAX_PEER_ID_CHARS:
        return "peer_id missing or too long"
    if len(announcement.peer_id_binding) != 64:
        return "peer_id_binding must be 64 bytes"
    if not announcement.base_fingerprint or len(announcement.base_fingerprint) > MAX_SHORT_STRING_CHARS:
        return "base_fingerprint missing or too long"
    if not all(_finite(x) and x >= 0 for x in (announcement.timestamp, announcement.expires_at)):
        return "a time is negative or not finite"
    if announcement.expires_at <= announcement.timestamp:
        return "expires_at must be after timestamp"
    return None


def _ints_out_of_range(**values: int) -> str | None:
    for name, value in values.items():
        if not 0 <= value <= MAX_WIRE_INT:
            return f"{name} {value} is outside 0..2^53-1"
    return None


def _times_out_of_range(**values: float) -> str | None:
    for name, value in values.items():
        if not 0 <= value <= MAX_TIMESTAMP:
            return f"{name} {value:g} is not a time"
    return None


def check_peer_record_ranges(record: peer_record_pb2.PeerRecord) -> str | None:
    for name, cap in CAPABILITY_CAPS.items():
        value = getattr(record.capability, name)
        if value > cap:
            return f"capability.{name} {value:g} is beyond any device (cap {cap:g})"
    if record.window_s > MAX_WINDOW_S:
        return f"window_s {record.window_s:g} is over a day"
    return (_times_out_of_range(timestamp=record.timestamp, expires_at=record.expires_at)
            or _ints_out_of_range(memory_bytes=record.device.memory_bytes))


def check_rollout_batch_ranges(batch: rollout_batch_pb2.RolloutBatch) -> str | None:
    problem = (_ints_out_of_range(window=batch.window, policy_version=batch.policy_version, batch_id=batch.batch_id)
               or _times_out_of_range(created_at=batch.created_at))
    if problem:
        return problem
    if not (0 < batch.temperature <= MAX_TEMPERATURE and 0 < batch.top_p <= 1):
        return f"temperature {batch.temperature:g} or top_p {batch.top_p:g} out of range"
    for group in batch.groups:
        problem = _ints_out_of_range(seed=group.task.seed, index=group.task.index)
        if problem:
            return problem
        for c in group.completions:
            if abs(c.reported_reward) > MAX_ABS_REWARD or any(lp < MIN_LOGPROB for lp in c.logprobs):
                return "a reward or log-prob out of range"
    return None


def check_rollout_announcement_ranges(announcement: rollout_batch_pb2.RolloutAnnouncement) -> str | None:
    return (_ints_out_of_range(window=announcement.window, first_batch_id=announcement.first_batch_id,
                               last_batch_id=announcement.last_batch_id)
            or _times_out_of_range(timestamp=announcement.timestamp, expires_at=announcement.expires_at))


def check_gradient_summary_ranges(summary: gradient_summary_pb2.GradientSummary) -> str | None:
    return (_ints_out_of_range(base_version=summary.base_version, step_start=summary.step_start,
                               step_end=summary.step_end, window=summary.window, summary_id=summary.summary_id)
            or _times_out_of_range(created_at=summary.created_at))


def check_summary_announcement_ranges(announcement: gradient_summary_pb2.SummaryAnnouncement) -> str | None:
    return (_ints_out_of_range(window=announcement.window, summary_id=announcement.summary_id,
                               size_bytes=announcement.size_bytes)
            or _times_out_of_range(timestamp=announcement.timestamp, expires_at=announcement.expires_at))


Check = Callable[[Message], "str | None"]
# Per message type: (structural check, range check).
_CHECKS: dict[type[Message], tuple[Check, Check]] = {
    peer_record_pb2.PeerRecord: (check_peer_record_structure, check_peer_record_ranges),
    rollout_batch_pb2.RolloutBatch: (check_rollout_batch_structure, check_rollout_batch_ranges),
    rollout_batch_pb2.RolloutAnnouncement: (check_rollout_announcement_structure, check_rollout_announcement_ranges),
    gradient_summary_pb2.GradientSummary: (check_gradient_summary_structure, check_gradient_summary_ranges),
    gradient_summary_pb2.SummaryAnnouncement: (check_summary_announcement_structure, check_summary_announcement_ranges),
}


def check_structure(message: Message) -> str | None:
    """Dispatch to the message type's structural check."""
    return _CHECKS[type(message)][0](message)


def check_ranges(message: Message) -> str | None:
    """Dispatch to the message type's range check (run after `check_structure` passed)."""
    return _CHECKS[type(message)][1](message)
