"""Versioned, signed wire messages (schemas in protocols/swarmnode/v1/).

- codec.py: the signed envelope: seal, open_envelope -> VerifiedMessage, MessageKind, this
  release's versions (PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS), VersionedSigner (an identity
  that seals in other versions), the body caps (MAX_BODY_BYTES, max_envelope_bytes), Rejected
  and its RejectReason
- limits.py: each message's structural and range limits, run by open_envelope
  (check_structure / check_ranges -> check_<message>_structure / check_<message>_ranges)
- chunk_offsets.py: a chunked top-k tensor's offsets on the wire, uint16 or gap-coded:
  gap_low_bits, chunk_lengths, chunk_entry_counts, encode_gaps, gap_offsets (checked decoding),
  tensor_gap_offsets
- signed_values.py: the checks every peer-signed value shares in context: check_lifetime,
  age_problem, open_announcement (a DHT announcement), open_served (a payload over a stream)
- peer_record.py: PeerRecordFields, build_peer_record, check_peer_record (a record of any
  readable version), spoken_versions, record_origin (whose record of another swarm or version this is)
- versions.py: ProtocolVersions (the versions a node speaks and writes), THIS_RELEASE,
  common_version (the highest version two ranges share), who_should_upgrade,
  describe_incompatible (the one line naming both ranges and the side that should upgrade)
- rollout_messages.py: rollout announcements and batches: build_rollout_announcement,
  check_rollout_announcement -> CheckedRolloutAnnouncement, seal_rollout_batch, open_rollout_batch
- summary_messages.py: summary announcements and gradient summaries: build_summary_announcement,
  check_summary_announcement -> CheckedSummaryAnnouncement, seal_summary, open_summary
- libp2p_messages.py: the py-libp2p transport's own wire messages, decoded with bounds, and the
  mapping of the swarm's (key, subkey) pairs onto Kademlia keys
- relay_messages.py: dial-back and relay messages (not signed: they travel between two
  authenticated peers and carry the swarm's signed messages), their protocols and bounded decoders
- generated/: the *_pb2 modules generated from protocols/ (scripts/dev/gen_protos.py)
"""
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
from swarmnode.protocol.peer_record import (
    PeerRecordFields,
    RecordOrigin,
    build_peer_record,
    check_peer_record,
    record_origin,
    spoken_versions,
)
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
    "RecordOrigin",
    "build_peer_record",
    "record_origin",
    "spoken_versions",
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
