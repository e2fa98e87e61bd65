"""`swarmnode bench async --json`, as a user runs it: both ways train the same samples; the figures parse."""
import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def test_bench_async_json_reports_both_rates_and_their_ratio():
    proc = subprocess.run(
        [sys.executable, "-m", "swarmnode", "bench", "async", "--steps", "2", "--prompts", "4", "--samples", "2",
         "--repeats", "1", "--json"],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["samples"] == 2 * 4 * 2
    assert result["sync_samples_per_s"] > 0 and result["async_samples_per_s"] > 0
    # (the seconds are rounded to ms, too coarse for these tiny runs: compare the rates)
    assert result["ratio"] == pytest.approx(result["async_samples_per_s"] / result["sync_samples_per_s"], rel=0.01)
    assert result["async_mode"] in ("thread", "process") and set(result["async_seconds_by_mode"]) == {"thread", "process"}
