"""scripts/gpu/collect_results.py: a device_checks.sh output folder into docs/results/gpu.json."""
import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("collect_results", ROOT / "scripts" / "gpu" / "collect_results.py")
collect = importlib.util.module_from_spec(spec)
spec.loader.exec_module(collect)


def test_a_session_folder_becomes_one_entry_with_its_goals_checked(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "gpu.txt").write_text("name, memory.total [MiB]\nNVIDIA H100 80GB HBM3, 81559 MiB\ntorch 2.11.0 transformers 5.17.0\n")
    (out / "async.cmd").write_text("python3 -m swarmnode bench async --json\n")
    (out / "async.log").write_text('progress\n{"not": "this one"}\nasync/sync ratio: 1.31x\n'
                                   '{"ratio": 1.31, "generator_beside_over_alone": 0.85}\n')
    (out / "decode.cmd").write_text("python3 scripts/bench/bench_generation.py --json $OUT/generation.json\n")
    (out / "generation.json").write_text(json.dumps({"tokens_per_s": {"loop": 17000.0, "generate": 23000.0, "static": 52700.0}}))
    (out / "tests.cmd").write_text("python3 -m pytest -m cuda tests/cuda\n")
    (out / "tests.log").write_text("....F\nFAILED tests/cuda/test_cuda.py::x\n1 failed, 13 passed, 2 warnings in 95.20s\n")
    entry = collect.read_session(out)
    assert entry["machine"][1] == "NVIDIA H100 80GB HBM3, 81559 MiB"
    assert entry["parts"]["async"]["figures"]["ratio"] == 1.31
    assert entry["parts"]["tests"] == {"command": "python3 -m pytest -m cuda tests/cuda", "figures": "1 failed, 13 passed, 2 warnings in 95.20s"}
    assert entry["parts"]["swarm"] == {"ran": False}
    # 52,700 / 17,000 = 3.1
    assert entry["goals"] == {
        "async_over_sync": {"goal": 1.2, "got": 1.31, "met": True},
        "generator_beside_over_alone": {"goal": 0.9, "got": 0.85, "met": False},
        "static_decode_tokens_per_s": {"goal": 50000.0, "got": 52700.0, "met": True},
        "static_over_loop": {"goal": 3.0, "got": 3.1, "met": True},
    }

    results = tmp_path / "gpu.json"
    results.write_text(json.dumps({"about": "kept", "async_and_decode": {"earlier": {"x": 1}}}))
    assert collect.main([str(out), "--session", "s2", "--into", str(results)]) == 0
    written = json.loads(results.read_text())
    assert written["about"] == "kept" and set(written["async_and_decode"]) == {"earlier", "s2"}
    assert "generator_beside_over_alone    goal       0.9  got      0.85  missed" in capsys.readouterr().out


def test_a_part_without_figures_keeps_its_log_tail(tmp_path):
    (tmp_path / "async.cmd").write_text("python3 -m swarmnode bench async\n")
    (tmp_path / "async.log").write_text("\n".join(f"line {i}" for i in range(30)) + "\nTraceback: out of memory\n")
    entry = collect.read_session(tmp_path)
    assert entry["parts"]["async"]["figures"] is None and entry["parts"]["async"]["log_tail"][-1] == "Traceback: out of memory"
    assert entry["goals"]["async_over_sync"] == {"goal": 1.2, "got": None, "met": None}
    assert collect.main([str(tmp_path / "missing"), "--session", "s"]) == 2
