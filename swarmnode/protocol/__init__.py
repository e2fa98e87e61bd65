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
from swarmnode.protocol.generated.gradient_summary_pb2 import GradientSummary, SummaryAnnouncement
from swarmnode.protocol.generated.peer_record_pb2 import Capability, DeviceInfo, PeerRecord
from swarmnode.protocol.generated.rollout_batch_pb2 import RolloutBatch
from swarmnode.protocol.peer_record import PeerRecordFields, build_peer_record, check_peer_record
from swarmnode.protocol.summary_messages import (
    CheckedSummaryAnnouncement,
    build_summary_announcement,
    check_summary_announcement,
    open_summary,
    seal_summary,
)

__all__ = [
    "MAX_BODY_BYTES",
    "PROTOCOL_VERSION",
    "Capability",
    "CheckedSummaryAnnouncement",
    "DeviceInfo",
    "GradientSummary",
    "MessageKind",
    "PeerRecord",
    "PeerRecordFields",
    "Rejected",
    "RejectReason",
    "RolloutBatch",
    "SummaryAnnouncement",
    "VerifiedMessage",
    "build_peer_record",
    "build_summary_announcement",
    "check_peer_record",
    "check_summary_announcement",
    "max_envelope_bytes",
    "open_envelope",
    "open_summary",
    "seal",
    "seal_summary",
    "signing_bytes",
]
