"""testing/experiments/local_runs.py: --set overrides, fresh homes, runs kept for --resume, the polls
handed on while waiting."""
import json
from io import StringIO

import pytest
from rich.console import Console

from swarmnode.testing.experiments.local_runs import (
    apply_overrides,
    fresh_home,
    kept_runs,
    parse_overrides,
    wait_until_trained,
)


def test_overrides_are_read_as_yaml_and_applied_by_path():
    assert parse_overrides(["summaries.outer_lr=1.5", "rollouts.share=false"]) == {"summaries.outer_lr": 1.5,
                                                                                  "rollouts.share": False}
    assert apply_overrides({"training": {"lr": 1}}, ["training.lr=2", "a.b.c=x"]) == {"training": {"lr": 2},
                                                                                     "a": {"b": {"c": "x"}}}
    with pytest.raises(SystemExit):
        parse_overrides(["lr=1"])


def test_a_fresh_home_is_empty(tmp_path):
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "old").write_text("x")
    assert list(fresh_home(tmp_path / "home").iterdir()) == []


def test_kept_runs_only_with_resume_and_the_same_settings(tmp_path):
    path = tmp_path / "runs.json"
    path.write_text(json.dumps({"settings": {"steps": 5}, "runs": [{"seed": 0}]}))
    assert kept_runs(path, {"steps": 5}, resume=True) == [{"seed": 0}]
    assert kept_runs(path, {"steps": 5}, resume=False) == []
    with pytest.raises(SystemExit):
        kept_runs(path, {"steps": 6}, resume=True)


class FinishedSwarm:
    """A swarm whose one node has already taken its steps (no waiting between polls)."""

    root = "swarm"

    def poll(self):
        return [{"name": "node0", "peer_id": "12D3KooWnode0", "state": "running", "peers": [],
                 "training": {"phase": "done", "steps": 5}}]


def test_wait_until_trained_hands_every_poll_to_on_poll():
    polls = []
    rows = wait_until_trained(FinishedSwarm(), 5, "test", Console(file=StringIO()), on_poll=polls.append)
    assert polls == [rows] and rows[0]["training"]["steps"] == 5
