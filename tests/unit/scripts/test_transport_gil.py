"""scripts/bench/transport_gil.py: the latency summary (values worked out by hand)."""
import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "bench" / "transport_gil.py"


def test_summary_is_p50_p90_and_max_in_milliseconds():
    spec = importlib.util.spec_from_file_location("transport_gil", SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    seconds = [0.001 * i for i in range(1, 11)]  # 1..10 ms
    assert bench.summary(seconds) == {"p50_ms": 5.5, "p90_ms": 10.0, "max_ms": 10.0}
