"""Builders shared by the summary tests (and the summary gossip tests of node/gossip): a tiny
model, its shapes and a compressed summary of it."""
import torch

from swarmnode.protocol.generated import gradient_summary_pb2 as pb
from swarmnode.summaries import CompressionConfig
from swarmnode.testing.hostile.summary_crafting import make_summary


BASE = "base0123456789ab"


CFG = CompressionConfig(density=0.25, bits=2, chunk_size=32)  # several chunks per weight, one per bias


def tiny_model(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(16, 24), torch.nn.Tanh(), torch.nn.Linear(24, 5))


SHAPES = {name: tuple(p.shape) for name, p in tiny_model().named_parameters()}


def summary(**kwargs) -> pb.GradientSummary:
    return make_summary(SHAPES, base_fingerprint=BASE, config=CFG, **kwargs)
