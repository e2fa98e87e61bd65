"""scripts/gpu/collect_results.py: device_checks.sh's packed output into docs/results/gpu.json."""
import json
import tarfile
from pathlib import Path

from tests.helpers import load_script

ROOT = Path(__file__).resolve().parents[3]
collect = load_script("scripts/gpu/collect_results.py")


def first_call(work: Path) -> Path:
    """What the first device call's async, decode and tests parts leave in $WORK."""
    work.mkdir()
    (work / "gpu.txt").write_text("name, memory.total [MiB]\nNVIDIA H100 80GB HBM3, 81559 MiB\ntorch 2.11.0 transformers 5.17.0\n")
    (work / "async.cmd").write_text("python3 -m swarmnode bench async --json\n")
    (work / "async.log").write_text('progress\n{"not": "this one"}\nasync/sync ratio: 1.31x\n'
                                    '{"ratio": 1.31, "generator_beside_over_alone": 0.85}\n')
    (work / "decode.cmd").write_text("python3 scripts/bench/bench_generation.py --json $WORK/generation.json\n")
    (work / "generation.json").write_text(json.dumps({"tokens_per_s": {"loop": 17000.0, "generate": 23000.0, "static": 52700.0},
                                                      "decode_used": {"loop": "loop", "generate": "generate", "static": "static"}}))
    (work / "tests.cmd").write_text("python3 -m pytest -m cuda tests/cuda\n")
    (work / "tests.log").write_text("....F\nFAILED tests/cuda/test_cuda.py::x\n1 failed, 13 passed, 2 warnings in 95.20s\n")
    return work


def test_two_calls_packed_become_one_entry_with_the_goals_checked(tmp_path, capsys):
    work = first_call(tmp_path / "work1")
    with tarfile.open(tmp_path / "call1.tar.gz", "w:gz") as archive:
        archive.add(work, arcname=".")
    second = tmp_path / "work2"
    second.mkdir()
    (second / "swarm.cmd").write_text("python3 -m swarmnode swarm local --devices cuda,cpu\n")
    (second / "swarm-rates.json").write_text(json.dumps({"gpu_over_cpu": {"steps_per_s": 2.5}}))

    entry = collect.read_session(collect.unpacked([tmp_path / "call1.tar.gz", second], tmp_path / "scratch"))
    assert entry["machine"][1] == "NVIDIA H100 80GB HBM3, 81559 MiB"
    assert entry["parts"]["async"]["figures"]["ratio"] == 1.31
    assert entry["parts"]["tests"] == {"command": "python3 -m pytest -m cuda tests/cuda", "figures": "1 failed, 13 passed, 2 warnings in 95.20s"}
    assert entry["parts"]["swarm"]["figures"] == {"gpu_over_cpu": {"steps_per_s": 2.5}}
    # 52,700 / 17,000 = 3.1
    assert entry["goals"] == {
        "async_over_sync": {"goal": 1.2, "got": 1.31, "met": True},
        "generator_beside_over_alone": {"goal": 0.9, "got": 0.85, "met": False},
        "static_decode_tokens_per_s": {"goal": 50000.0, "got": 52700.0, "met": True},
        "static_over_loop": {"goal": 3.0, "got": 3.1, "met": True},
    }

    results = tmp_path / "gpu.json"
    results.write_text(json.dumps({"about": "kept", "async_and_decode": {"earlier": {"x": 1}}}))
    assert collect.main([str(tmp_path / "call1.tar.gz"), str(second), "--session", "s2", "--into", str(results)]) == 0
    written = json.loads(results.read_text())
    assert written["about"] == "kept" and set(written["async_and_decode"]) == {"earlier", "s2"}
    assert written["async_and_decode"]["s2"]["parts"]["swarm"]["command"].endswith("--devices cuda,cpu")
    assert "generator_beside_over_alone    goal       0.9  got      0.85  missed" in capsys.readouterr().out


def test_a_static_decode_that_fell_back_gives_no_static_figure(tmp_path):
    work = first_call(tmp_path / "work")
    figures = json.loads((work / "generation.json").read_text())
    figures["decode_used"]["static"] = "loop"
    (work / "generation.json").write_text(json.dumps(figures))
    goals = collect.read_session([work])["goals"]
    assert goals["static_decode_tokens_per_s"]["met"] is None and goals["static_over_loop"]["got"] is None


def test_a_part_without_figures_keeps_its_log_tail(tmp_path):
    (tmp_path / "async.cmd").write_text("python3 -m swarmnode bench async\n")
    (tmp_path / "async.log").write_text("\n".join(f"line {i}" for i in range(30)) + "\nTraceback: out of memory\n")
    entry = collect.read_session([tmp_path])
    assert entry["parts"]["async"]["figures"] is None and entry["parts"]["async"]["log_tail"][-1] == "Traceback: out of memory"
    assert entry["parts"]["decode"] == {"ran": False}
    assert entry["goals"]["async_over_sync"] == {"goal": 1.2, "got": None, "met": None}
    assert collect.main([str(tmp_path / "missing.tar.gz"), "--session", "s"]) == 2


def test_pytest_summaries():
    assert collect.pytest_summary("x\n847 passed, 19 skipped, 34 warnings in 1248.21s (0:20:48)\n") == \
        "847 passed, 19 skipped, 34 warnings in 1248.21s (0:20:48)"
    assert collect.pytest_summary("==== 19 skipped in 3.10s ====\n") == "19 skipped in 3.10s"
    assert collect.pytest_summary("no tests ran in 0.01s\n") == "no tests ran in 0.01s"
    assert collect.pytest_summary("collecting ...\n3 passed tests are fine\n") is None
