"""Versioned, signed wire messages (schemas in protocols/swarmnode/v1/)."""
from swarmnode.protocol.codec import (
    MAX_BODY_BYTES,
    PROTOCOL_VERSION,
    MessageKind,
    Rejected,
    RejectReason,
    VerifiedMessage,
    max_envelope_bytes,
    open_envelope,
    seal,
    signing_bytes,
)
from swarmnode.protocol.generated.gradient_summary_pb2 import GradientSummary
from swarmnode.protocol.generated.peer_record_pb2 import Capability, DeviceInfo, PeerRecord
from swarmnode.protocol.generated.rollout_batch_pb2 import RolloutBatch
from swarmnode.protocol.peer_record import PeerRecordFields, build_peer_record, check_peer_record

__all__ = [
    "MAX_BODY_BYTES",
    "PROTOCOL_VERSION",
    "Capability",
    "DeviceInfo",
    "GradientSummary",
    "MessageKind",
    "PeerRecord",
    "PeerRecordFields",
    "Rejected",
    "RejectReason",
    "RolloutBatch",
    "VerifiedMessage",
    "build_peer_record",
    "check_peer_record",
    "max_envelope_bytes",
    "open_envelope",
    "seal",
    "signing_bytes",
]
