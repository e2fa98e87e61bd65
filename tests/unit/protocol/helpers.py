"""Builders shared by the peer-record tests (protocol, swarm, status)."""
from dataclasses import replace

from swarmnode.protocol.generated import peer_record_pb2
from tests.helpers import record_fields

SPEEDS = {"generate_tokens_per_s": 1234.56, "train_samples_per_s": 7.891, "train_tokens_per_s": 50.0,
          "seconds_per_step": 2.34567}


def fields(**capability):
    """record_fields("s") with a capability of 10 GFLOPS and the given measured speeds."""
    return replace(record_fields("s"), capability=peer_record_pb2.Capability(**{"matmul_gflops": 10.0, **capability}))
