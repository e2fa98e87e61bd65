"""Builders shared by the protocol tests (and the peer-record tests of swarm and status)."""
import math
from dataclasses import replace

import numpy as np
import pytest

from swarmnode.protocol import MessageKind, Rejected, RolloutBatch, seal
from swarmnode.protocol.codec import VersionedSigner
from swarmnode.protocol.generated import gradient_summary_pb2 as gs
from swarmnode.protocol.generated import peer_record_pb2, rollout_batch_pb2
from swarmnode.protocol.generated.rollout_batch_pb2 import RolloutAnnouncement
from swarmnode.protocol.rollout_messages import build_rollout_announcement
from swarmnode.protocol.versions import ProtocolVersions
from tests.helpers import record_fields

SPEEDS = {"generate_tokens_per_s": 1234.56, "train_samples_per_s": 7.891, "train_tokens_per_s": 50.0,
          "seconds_per_step": 2.34567}


def fields(**capability):
    """record_fields("s") with a capability of 10 GFLOPS and the given measured speeds."""
    return replace(record_fields("s"), capability=peer_record_pb2.Capability(**{"matmul_gflops": 10.0, **capability}))


def rollout_batch() -> RolloutBatch:
    """A valid one-group, one-completion rollout batch."""
    batch = RolloutBatch(window=7, policy_version=3, model_fingerprint="m", tokenizer_fingerprint="t",
                         created_at=1000.0, temperature=1.0, top_p=1.0)
    group = batch.groups.add(prompt="1+2=")
    group.task.task, group.task.seed, group.task.index = "chain_sum", 1, 2
    group.completions.add(text="3", token_ids=[5, 6], logprobs=[-0.1, -0.2], finish_reason="stop")
    return batch


def announcement(identity) -> RolloutAnnouncement:
    """A valid rollout announcement by `identity`."""
    return RolloutAnnouncement(peer_id=identity.peer_id, window=3, first_batch_id=1, last_batch_id=4,
                               timestamp=1.0, expires_at=2.0, peer_id_binding=identity.bind_signing_key())

def speaking(identity, lowest: int, highest: int) -> VersionedSigner:
    """`identity` as a node of protocol versions lowest..highest seals: in the lowest (as
    swarmnode/testing/other_version.py makes a whole node do)."""
    return VersionedSigner(identity, ProtocolVersions(lowest, highest))


def rejection(fn, *args, **kwargs) -> Rejected:
    """What `fn(*args, **kwargs)` raises: a Rejected."""
    with pytest.raises(Rejected) as info:
        fn(*args, **kwargs)
    return info.value


NOW = 1000.0
TTL = 30.0


def announce(identity, now=NOW, ttl=TTL, first=3, last=7, fingerprint="fp"):
    return build_rollout_announcement(identity, window=33, first_batch_id=first, last_batch_id=last,
                                      model_fingerprint=fingerprint, now=now, ttl_s=ttl)


def forged_announcement(signer, binder, peer_id=None):
    """An announcement sealed by `signer` whose peer_id_binding was made by `binder`."""
    message = rollout_batch_pb2.RolloutAnnouncement(
        peer_id=peer_id or signer.peer_id, window=33, first_batch_id=0, last_batch_id=1, model_fingerprint="fp",
        timestamp=NOW, expires_at=NOW + TTL, peer_id_binding=binder.bind_signing_key(),
    )
    return seal(signer, MessageKind.ROLLOUT_ANNOUNCEMENT, message)


# Chunked top-k gradient summaries written by hand with numpy (uint16 offsets, packed codes, float16
# scales), exactly as protocols/swarmnode/v1/gradient_summary.proto lays them out.
BASE = "base-abc"


CHUNKED = gs.COMPRESSION_SCHEME_CHUNKED_TOPK


BITS = {gs.VALUE_DTYPE_INT2: 2, gs.VALUE_DTYPE_INT4: 4, gs.VALUE_DTYPE_INT8: 8}


def pack_codes(codes: np.ndarray, bits: int) -> bytes:
    """Unsigned `bits`-bit codes packed little-end first (8 // bits to a byte)."""
    per = 8 // bits
    padded = np.concatenate([codes, np.zeros((-len(codes)) % per, dtype=np.uint8)]).astype(np.uint8)
    shifts = (np.arange(per) * bits).astype(np.uint8)
    return (padded.reshape(-1, per) << shifts).sum(axis=1).astype(np.uint8).tobytes()


def chunked_tensor(name, shape, chunk_size, per_chunk, value_dtype=gs.VALUE_DTYPE_INT2, seed=0) -> gs.CompressedTensor:
    rng = np.random.default_rng(seed)
    numel = math.prod(shape)
    offsets = []
    for start in range(0, numel, chunk_size):
        length = min(chunk_size, numel - start)
        offsets.append(rng.choice(length, size=min(per_chunk, length), replace=False).astype("<u2"))
    offsets = np.concatenate(offsets)
    bits = BITS[value_dtype]
    codes = rng.integers(0, 2**bits, size=len(offsets), dtype=np.uint8)
    n_chunks = -(-numel // chunk_size)
    scales = rng.uniform(0.01, 1.0, size=n_chunks).astype("<f2")
    return gs.CompressedTensor(name=name, shape=list(shape), indices=offsets.tobytes(),
                               values=pack_codes(codes, bits), value_dtype=value_dtype, scales=scales.tobytes())


def chunked_summary(value_dtype=gs.VALUE_DTYPE_INT2, chunk_size=16, per_chunk=3) -> gs.GradientSummary:
    s = gs.GradientSummary(model_fingerprint="m", base_fingerprint=BASE, base_version=2, step_start=0, step_end=20,
                           scheme=CHUNKED, window=33, num_samples=64, created_at=NOW, summary_id=7,
                           chunk_size=chunk_size, per_chunk=per_chunk)
    # 70 elements: four full chunks of 16 and a last one of 6; 16 elements: exactly one chunk.
    s.tensors.append(chunked_tensor("layer.weight", (10, 7), chunk_size, per_chunk, value_dtype, seed=1))
    s.tensors.append(chunked_tensor("layer.bias", (16,), chunk_size, per_chunk, value_dtype, seed=2))
    return s


def _mutate(summary, tensor=0, **fields):
    for name, value in fields.items():
        setattr(summary.tensors[tensor], name, value)
    return summary


def _offsets(summary, tensor=0) -> np.ndarray:
    return np.frombuffer(summary.tensors[tensor].indices, dtype="<u2").copy()


def _with_offset(position: int, value: int, tensor: int = 0):
    s = chunked_summary()
    offsets = _offsets(s, tensor)
    offsets[position] = value
    return _mutate(s, tensor, indices=offsets.astype("<u2").tobytes())
