"""`swarmnode bench async --json`, as a user runs it: both ways train the same samples; the figures
parse, with the generator's tokens/s alone and beside the trainer and each side's idle share; a bad
flag is one line."""
import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def test_bench_async_json_reports_both_rates_and_their_ratio():
    proc = subprocess.run(
        [sys.executable, "-m", "swarmnode", "bench", "async", "--steps", "2", "--prompts", "4", "--samples", "2",
         "--repeats", "1", "--decode", "static", "--json"],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["samples"] == 2 * 4 * 2
    assert result["sync_samples_per_s"] > 0 and result["async_samples_per_s"] > 0
    # (the seconds are rounded to ms, too coarse for these tiny runs: compare the rates)
    assert result["ratio"] == pytest.approx(result["async_samples_per_s"] / result["sync_samples_per_s"], rel=0.01)
    assert result["async_mode"] in ("thread", "process") and set(result["async_seconds_by_mode"]) == {"thread", "process"}
    assert result["generator_tokens_per_s_alone"] > 0 and result["generator_tokens_per_s_beside"] > 0
    assert result["generator_beside_over_alone"] == pytest.approx(
        result["generator_tokens_per_s_beside"] / result["generator_tokens_per_s_alone"], rel=0.01)
    assert 0 <= result["generator_idle_share"] <= 1 and 0 <= result["trainer_idle_share"] <= 1
    assert (result["device"], result["dtype"], result["decode"]) == ("cpu", "float32", "static")
    assert "tokens/s alone" in proc.stderr and "idle (async): generator" in proc.stderr
    assert "generator tried as a thread" in proc.stderr and "{" not in proc.stderr  # figures, not a dict


@pytest.mark.parametrize("flags, expected", [
    (["--device", "cuda:x"], "--device cuda:x: expected cpu, cuda or cuda:<index>"),
    (["--dtype", "fp8"], "--dtype fp8: expected one of float32, bfloat16, float16"),
    (["--model-shape", "7b"], "--model-shape 7b: expected one of 0.5b"),
    (["--decode", "fast"], "--decode fast: expected one of auto, loop, bucketed, generate, static"),
])
def test_bench_async_refuses_a_bad_flag_in_one_line(flags, expected):
    proc = subprocess.run([sys.executable, "-m", "swarmnode", "bench", "async", *flags],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and expected in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
