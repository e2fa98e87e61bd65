"""scripts/bench/transport_gil.py: the latency summary (values worked out by hand)."""
from tests.helpers import load_script


def test_summary_is_p50_p90_and_max_in_milliseconds():
    bench = load_script("scripts/bench/transport_gil.py")
    seconds = [0.001 * i for i in range(1, 11)]  # 1..10 ms
    assert bench.summary(seconds) == {"p50_ms": 5.5, "p90_ms": 10.0, "max_ms": 10.0}
