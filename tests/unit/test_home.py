"""home.py: the record of the last run (begin_run, end_run) and the home's log paths."""
import json

from swarmnode.home import NodeHome, begin_run, end_run


def test_each_run_sees_how_the_previous_one_ended(tmp_path):
    home = NodeHome(tmp_path / "home")
    assert home.node_log == tmp_path / "home" / "logs" / "node.log" and home.logs_dir == home.node_log.parent
    assert begin_run(home, pid=11, now=100.0) is None  # the home's first run
    killed = begin_run(home, pid=12, now=200.0)  # pid 11 never reached end_run: killed or crashed
    assert killed == {"pid": 11, "started_at": 100.0, "ended": None}
    end_run(home, "cleanly", now=250.0)
    assert begin_run(home, pid=13, now=300.0) == {"pid": 12, "started_at": 200.0, "ended": "cleanly", "ended_at": 250.0}
    end_run(home, "failed: training failed: boom", now=350.0)
    assert begin_run(home, pid=14, now=400.0)["ended"] == "failed: training failed: boom"


def test_a_damaged_record_counts_as_none(tmp_path):
    home = NodeHome(tmp_path)
    home.run_dir.mkdir()
    home.last_run_file.write_text("{not json")
    assert begin_run(home, pid=1, now=1.0) is None
    assert json.loads(home.last_run_file.read_text()) == {"pid": 1, "started_at": 1.0, "ended": None}
