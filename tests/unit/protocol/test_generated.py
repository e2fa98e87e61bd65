"""The generated Python must match protocols/ (the source of truth); regenerate with scripts/dev/gen_protos.py."""
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2

from swarmnode.protocol.generated import (
    envelope_pb2,
    gradient_summary_pb2,
    libp2p_pb2,
    peer_record_pb2,
    relay_pb2,
    rollout_batch_pb2,
)

ROOT = Path(__file__).resolve().parents[3]
PROTO_DIR = ROOT / "protocols" / "swarmnode" / "v1"
MODULES = {
    "envelope.proto": envelope_pb2,
    "gradient_summary.proto": gradient_summary_pb2,
    "libp2p.proto": libp2p_pb2,
    "peer_record.proto": peer_record_pb2,
    "relay.proto": relay_pb2,
    "rollout_batch.proto": rollout_batch_pb2,
}


def _drop_json_names(messages) -> None:
    """protoc's descriptor set carries json_name; python gencode omits it."""
    for message in messages:
        for field in message.field:
            field.ClearField("json_name")
        _drop_json_names(message.nested_type)


def test_every_proto_has_a_generated_module():
    assert sorted(p.name for p in PROTO_DIR.glob("*.proto")) == sorted(MODULES)


def test_generated_modules_are_not_stale(tmp_path):
    pytest.importorskip("grpc_tools")
    out = tmp_path / "descriptors.pb"
    protos = [str(PROTO_DIR / name) for name in sorted(MODULES)]
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", f"-I{ROOT / 'protocols'}", f"--descriptor_set_out={out}", *protos],
        check=True,
    )
    fresh = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    by_name = {f.name: f for f in fresh.file}
    for name, module in MODULES.items():
        _drop_json_names(by_name[f"swarmnode/v1/{name}"].message_type)
        shipped = descriptor_pb2.FileDescriptorProto.FromString(module.DESCRIPTOR.serialized_pb)
        assert shipped == by_name[f"swarmnode/v1/{name}"], f"{name} changed: run scripts/dev/gen_protos.py"
