"""Builders for status documents, shared by the status, cli and node tests."""
from swarmnode.protocol.generated import peer_record_pb2
from swarmnode.status.snapshot import (
    ClockSection,
    JoinState,
    MachineSection,
    NodeSection,
    SwarmSection,
    WorkSections,
    build_status,
)
from swarmnode.swarm.peers import MessageStats

SUMMARIES = {
    "enabled": True, "active": True, "base_fingerprint": "a1c04df6ea1c2c67", "sent": 12, "merged": 21, "fetched": 25,
    "rejected": {"norm_too_large": 2, "non_finite": 1}, "skipped_other_base": 4, "stale_dropped": 1,
    "bytes_per_summary": 43_520.0, "dense_bytes": 4 * 1_052_672, "compression_ratio": 96.75, "outer_steps": 12,
    "last_merge_age_s": 7.5, "merge_seconds": 3.25, "merge_cpu_seconds": 1.5, "partners_last": 2,
    "robust_merge": True, "skipped": {"low_trust": 5, "repeated_summary": 1}, "down_weighted": 9, "clipped": 14,
    "harmful": 3, "agreement_scale": 0.0312,
    "trust": {"12D3KooWGoodPeerAAAAAA": {"trust": 1.0, "score": 0.61, "judged": 12, "merged": 12, "skipped": 0,
                                         "harmful": 0, "agreement": 0.034},
              "12D3KooWBadPeerBBBBBB": {"trust": 0.0, "score": -0.61, "judged": 6, "merged": 0, "skipped": 6,
                                        "harmful": 4, "agreement": -0.031}},
}


def status(peers=(), protocol_versions=None, incompatible_peers=(), **work):
    """A status document of a running CPU node without a model; `work` are WorkSections' parts."""
    return build_status(
        NodeSection(peer_id="12D3KooWTest", swarm="s", software_version="0.1.0", protocol_version=1,
                    state=peer_record_pb2.NODE_STATE_RUNNING, started_at=1000.0, protocol_versions=protocol_versions),
        ClockSection(now=1100.0, window=1, window_s=30.0),
        SwarmSection(multiaddrs=["/ip4/127.0.0.1/tcp/1/p2p/12D3KooWTest"], client_mode=False, routing_table_size=0,
                     join=JoinState((), True, 0, None), peers=list(peers), stats=MessageStats(),
                     incompatible_peers=list(incompatible_peers)),
        MachineSection(device=peer_record_pb2.DeviceInfo(kind="cpu"), capability=peer_record_pb2.Capability(),
                       model_fingerprint=""),
        WorkSections(**work),
    )
