"""Gradient summaries: compress a pseudo-gradient with error feedback, check a peer's, judge it,
merge them robustly with an outer optimizer (DiLoCo / NoLoCo without a barrier). Pure math and
state; the node's loops (node/gossip/summaries.py) move the bytes.

- compress.py: CompressionConfig, compress (chunked top-k with error feedback), gap_coded (its
  offsets gap-coded for the wire), decode_tensor, dense_bytes
- checks.py: check_summary (base, names, shapes, finite values, norm bound), norm_bound
- outer.py: pseudo_gradient, peer_weights, frequency_corrections, merge_pseudo_gradients (the plain
  weighted mean), outer_update
- robust.py: robust_merge (each delta clipped, weighted by trust), cosine
- trust.py: TrustBook (each peer's earned trust, what to skip, veto and strike), Verdict
- echo.py: OwnSummaries (this node's last published summaries), echo_free_agreement (a peer's
  agreement with what only repeats them taken out)
- state.py: OuterLoop (anchor, momentum, residual, the loss gradients peers are judged on; one
  outer step) with OuterConfig
  and OuterResult, SummaryInbox and Received (peers' summaries waiting), fetch_allowance
"""
from swarmnode.summaries.checks import check_summary, norm_bound
from swarmnode.summaries.compress import CompressionConfig, compress, decode_tensor, dense_bytes, gap_coded
from swarmnode.summaries.outer import (
    frequency_corrections,
    merge_pseudo_gradients,
    outer_update,
    peer_weights,
    pseudo_gradient,
)
from swarmnode.summaries.robust import cosine, robust_merge
from swarmnode.summaries.state import OuterConfig, OuterLoop, OuterResult, Received, SummaryInbox, fetch_allowance
from swarmnode.summaries.trust import TrustBook, Verdict

__all__ = [
    "CompressionConfig", "OuterConfig", "OuterLoop", "OuterResult", "Received", "SummaryInbox", "TrustBook", "Verdict",
    "check_summary", "compress", "cosine", "decode_tensor", "dense_bytes", "fetch_allowance", "frequency_corrections",
    "gap_coded", "merge_pseudo_gradients",
    "norm_bound",
    "outer_update", "peer_weights", "pseudo_gradient", "robust_merge",
]
