"""Retry delays for joining the swarm (pure)."""
from __future__ import annotations


def backoff_delay(attempt: int, initial_s: float, max_s: float, factor: float = 2.0) -> float:
    """Delay before retry number `attempt` (1-based): min(max_s, initial_s * factor**(attempt-1))."""
    if attempt < 1:
        raise ValueError("attempt is 1-based")
    return min(max_s, initial_s * factor ** (attempt - 1))


def jittered(delay_s: float, draw: float) -> float:
    """`delay_s * (0.5 + 0.5 * draw)` for a uniform `draw` in [0, 1): between half and all of the
    delay, so that nodes cut off together (a bootstrap node restarting) do not retry in lockstep."""
    if not 0.0 <= draw <= 1.0:
        raise ValueError("draw is a uniform number in [0, 1]")
    return delay_s * (0.5 + 0.5 * draw)
