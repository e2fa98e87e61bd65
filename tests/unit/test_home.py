"""home.py: the record of the last run (begin_run, end_run), the home's log paths, and a bootstrap
node's saved flags (its role)."""
import json

import pytest

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


def test_a_bootstrap_home_is_known_by_its_saved_flags(tmp_path):
    from swarmnode.home import (
        BootstrapFileError, NodeHome, is_bootstrap_home, read_bootstrap_flags, start_command, write_bootstrap_flags)

    home = NodeHome(tmp_path)
    assert not is_bootstrap_home(home) and read_bootstrap_flags(home) is None
    assert start_command(home) == f"swarmnode run --home {tmp_path}"
    write_bootstrap_flags(home, {"--window-s": 30.0, "--announce": ["/dns4/b.example.org/tcp/7100"]})
    assert is_bootstrap_home(home) and start_command(home) == f"swarmnode bootstrap --home {tmp_path}"
    assert read_bootstrap_flags(home) == {"--window-s": 30.0, "--announce": ["/dns4/b.example.org/tcp/7100"]}
    for text in ("{", '{"role": "node", "flags": {}}', '{"role": "bootstrap", "flags": []}'):
        home.bootstrap_file.write_text(text, encoding="utf-8")
        with pytest.raises(BootstrapFileError, match="is not a bootstrap node's saved flags"):
            read_bootstrap_flags(home)
    home.bootstrap_file.unlink()
    home.bootstrap_file.mkdir()  # a file that cannot be read is named as such, not as a bad one
    with pytest.raises(BootstrapFileError, match=f"cannot read {home.bootstrap_file}: Is a directory"):
        read_bootstrap_flags(home)
