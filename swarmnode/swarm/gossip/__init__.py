"""The gossip's bookkeeping, without I/O (the loops that move the bytes are node/gossip/).

- rollout_bookkeeping.py: `RolloutOutbox` (batches served), `SenderLedger` / `PeerStanding`
  (cursors and strikes per sender), `HeldRequests` (long-polls), the fetch request and response
  bytes, and when to fetch (`skip_fetch`, `announcements_due`, `fetch_wanted`)
- summary_outbox.py: `SummaryOutbox` (sealed summaries served by id) and its request and
  response bytes
"""
