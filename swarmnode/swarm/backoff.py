"""Retry delays for joining the swarm (pure)."""
from __future__ import annotations


def backoff_delay(attempt: int, initial_s: float, max_s: float, factor: float = 2.0) -> float:
    """Delay before retry number `attempt` (1-based): min(max_s, initial_s * factor**(attempt-1))."""
    if attempt < 1:
        raise ValueError("attempt is 1-based")
    return min(max_s, initial_s * factor ** (attempt - 1))
