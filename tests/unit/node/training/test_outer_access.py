"""node/training/outer_access.py: what summary gossip sees of the outer loop, before and after it is built."""
import torch

from swarmnode.node.training.outer_access import OuterLoopAccess
from swarmnode.summaries import OuterConfig, OuterLoop, Received
from tests.unit.summaries.helpers import CFG, tiny_model


def test_before_the_outer_loop_is_built_nothing_is_fetched_or_shown():
    access = OuterLoopAccess(lambda: None)
    assert not access.built and access.max_norm(10.0) is None and not access.robust()
    assert access.shapes() == {} and access.stale_dropped() == 0
    assert access.agreement_scale() is None and access.trust_snapshot() == {}


def test_a_built_outer_loop_takes_summaries_and_shows_its_parts():
    loop = OuterLoop(tiny_model(), OuterConfig(every_steps=1, compression=CFG))
    access = OuterLoopAccess(lambda: loop)
    assert access.built and access.shapes() == loop.shapes and access.compression() == CFG
    assert access.clock() == loop.clock() and access.waiting() == 0
    tensors = {name: torch.zeros(shape) for name, shape in loop.shapes.items()}
    access.put(Received("peer", tensors, 0.0, loop.clock(), 0.0, None))
    assert access.waiting() == 1 == len(loop.inbox)
