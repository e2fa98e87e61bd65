"""Builders shared by the protocol tests (and the peer-record tests of swarm and status)."""
from dataclasses import replace

import pytest

from swarmnode.protocol import MessageKind, Rejected, RolloutBatch, seal
from swarmnode.protocol.generated import peer_record_pb2, rollout_batch_pb2
from swarmnode.protocol.generated.rollout_batch_pb2 import RolloutAnnouncement
from swarmnode.protocol.rollout_messages import build_rollout_announcement
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
