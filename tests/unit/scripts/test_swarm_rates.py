"""scripts/gpu/swarm_rates.py: a mixed swarm's speeds per node, and GPU over CPU, by hand."""
import json
from pathlib import Path

from tests.helpers import load_script

ROOT = Path(__file__).resolve().parents[3]
rates = load_script("scripts/gpu/swarm_rates.py")


def row(name: str, device: str | None, steps: int, seconds_per_step: float, samples_per_s: float) -> dict:
    memory = {"device": device, "in_use_bytes": 1, "peak_bytes": 2, "total_bytes": 3} if device else None
    return {"name": name, "uptime_s": 100.0, "training": {
        "steps": steps, "seconds_per_step": seconds_per_step, "train_samples_per_s": samples_per_s,
        "generate_tokens_per_s": 10.0 * samples_per_s, "train_tokens_per_s": None, "gpu_memory": memory}}


def test_gpu_node_against_the_cpu_nodes_mean(tmp_path, capsys):
    rows = [row("node0", "cuda:0", 300, 0.25, 900.0), row("node1", None, 100, 1.0, 200.0),
            row("node2", None, 50, 0.5, 400.0), {"name": "node3", "error": "not answering"}]
    nodes = [rates.node_rates(r) for r in rows]
    assert nodes[3] is None
    assert [(n["device"], n["steps_per_s"], n["run_steps_per_s"]) for n in nodes[:3]] == [
        ("cuda:0", 4.0, 3.0), ("cpu", 1.0, 1.0), ("cpu", 2.0, 0.5)]
    # steps/s: 4 / mean(1, 2) = 2.67; samples/s: 900 / mean(200, 400) = 3.0; no train tokens/s anywhere
    assert rates.gpu_over_cpu(nodes[:3]) == {"steps_per_s": 2.67, "train_samples_per_s": 3.0,
                                             "generate_tokens_per_s": 3.0, "train_tokens_per_s": None}
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps(rows))
    assert rates.main([str(summary), "--json", str(tmp_path / "rates.json")]) == 0
    out = capsys.readouterr().out
    assert "gpu / cpu: steps_per_s 2.67x" in out and "no training figures from: node3" in out
    assert json.loads((tmp_path / "rates.json").read_text())["gpu_over_cpu"]["train_samples_per_s"] == 3.0
    assert rates.main([str(tmp_path / "missing.json")]) == 2
