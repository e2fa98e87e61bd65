"""Gradient summaries: compress a pseudo-gradient with error feedback, check a peer's, merge
them with an outer optimizer (DiLoCo / NoLoCo without a barrier). Pure math and state; the
node's loops (node/summary_gossip.py) move the bytes."""
from swarmnode.summaries.checks import check_summary, norm_bound
from swarmnode.summaries.compress import CompressionConfig, compress, decode_tensor, dense_bytes
from swarmnode.summaries.outer import (
    frequency_corrections,
    merge_pseudo_gradients,
    outer_update,
    peer_weights,
    pseudo_gradient,
)
from swarmnode.summaries.state import OuterConfig, OuterLoop, OuterResult, Received, SummaryInbox, fetch_allowance

__all__ = [
    "CompressionConfig", "OuterConfig", "OuterLoop", "OuterResult", "Received", "SummaryInbox",
    "check_summary", "compress", "decode_tensor", "dense_bytes", "fetch_allowance", "frequency_corrections",
    "merge_pseudo_gradients",
    "norm_bound",
    "outer_update", "peer_weights", "pseudo_gradient",
]
