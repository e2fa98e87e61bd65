"""testing/experiments/local_runs.py: --set overrides, fresh homes, runs kept for --resume."""
import json

import pytest

from swarmnode.testing.experiments.local_runs import apply_overrides, fresh_home, kept_runs, parse_overrides


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
