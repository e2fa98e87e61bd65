"""Shared builders for tests."""
from swarmnode.protocol import PeerRecordFields
from swarmnode.protocol.generated import peer_record_pb2


def record_fields(swarm: str = "s", gflops: float = 0.0) -> PeerRecordFields:
    """PeerRecordFields of a running CPU node in `swarm`."""
    return PeerRecordFields(
        software_version="0.1.0", swarm=swarm, multiaddrs=("/ip4/127.0.0.1/tcp/1",), model_fingerprint="",
        device=peer_record_pb2.DeviceInfo(kind="cpu"), capability=peer_record_pb2.Capability(matmul_gflops=gflops),
        state=peer_record_pb2.NODE_STATE_RUNNING, client_mode=False,
    )
