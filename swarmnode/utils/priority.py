"""The scheduling priority of the calling thread (Linux: each thread has its own nice value)."""
from __future__ import annotations

import os
import sys
import threading


def lower_thread_priority(nice: int) -> str | None:
    """Raise the calling thread's nice value to `nice` (0..19; never lowers it), so that under
    CPU contention the process's other threads and processes go first. Threads and processes
    this thread starts afterwards inherit it. Returns why it could not, or None (also when
    `nice` is 0: nothing to do)."""
    if nice <= 0:
        return None
    if not sys.platform.startswith("linux"):
        return f"thread priorities are per process on {sys.platform}"
    tid = threading.get_native_id()
    try:
        current = os.getpriority(os.PRIO_PROCESS, tid)
        if current < nice:
            os.setpriority(os.PRIO_PROCESS, tid, nice)
    except OSError as e:
        return f"setpriority failed: {e}"
    return None
