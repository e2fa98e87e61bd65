"""utils/priority.py: the calling thread's nice value is raised, its process's other threads keep theirs."""
import os
import sys
import threading

import pytest

from swarmnode.utils.priority import lower_thread_priority

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice values are Linux's")


def _in_thread(fn):
    out = {}

    def run():
        out["result"] = fn()
        out["nice"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        out["child_nice"] = _child_nice()

    t = threading.Thread(target=run)
    t.start()
    t.join()
    return out


def _child_nice():
    seen = {}
    t = threading.Thread(target=lambda: seen.update(nice=os.getpriority(os.PRIO_PROCESS, threading.get_native_id())))
    t.start()
    t.join()
    return seen["nice"]


def test_only_the_calling_thread_and_what_it_starts_yield():
    main = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    target = min(19, main + 5)
    out = _in_thread(lambda: lower_thread_priority(target))
    assert out == {"result": None, "nice": target, "child_nice": target}
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == main


def test_zero_or_a_value_below_the_current_one_changes_nothing():
    main = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    assert _in_thread(lambda: lower_thread_priority(0))["nice"] == main
    assert _in_thread(lambda: (lower_thread_priority(main + 2), lower_thread_priority(main + 1))[1])["nice"] == main + 2
