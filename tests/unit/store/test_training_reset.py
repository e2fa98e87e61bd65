"""store/training_reset.py: the training tied to a model moves into a dated folder; the rest stays."""
from datetime import datetime

import pytest

from swarmnode.store.training_reset import aside_folder, move_aside, training_state_in


def test_the_aside_folder_is_named_by_the_time_of_the_reset(tmp_path):
    now = datetime(2025, 3, 4, 5, 6, 7)
    assert aside_folder(tmp_path, now) == tmp_path / "old-training-20250304-050607"
    (tmp_path / "old-training-20250304-050607").mkdir()  # a reset in the same second made one already
    assert aside_folder(tmp_path, now) == tmp_path / "old-training-20250304-050607-2"


def test_checkpoints_and_metrics_move_aside_and_keys_config_and_standing_stay(tmp_path):
    (tmp_path / "checkpoints" / "v00000001").mkdir(parents=True)
    for name in ("metrics.sqlite", "metrics.sqlite-wal", "rollouts.sqlite", "node_key.pem", "config.yaml",
                 "base_fingerprint.json"):
        (tmp_path / name).write_text(name)
    found = training_state_in(tmp_path)
    assert [p.name for p in found] == ["checkpoints", "metrics.sqlite", "metrics.sqlite-wal"]
    aside = tmp_path / "old-training-1"
    move_aside(found, aside)
    assert (aside / "checkpoints" / "v00000001").is_dir() and (aside / "metrics.sqlite").read_text() == "metrics.sqlite"
    assert training_state_in(tmp_path) == []
    assert all((tmp_path / n).is_file() for n in ("rollouts.sqlite", "node_key.pem", "config.yaml", "base_fingerprint.json"))


def test_an_existing_aside_folder_is_never_merged_into(tmp_path):
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "old").mkdir()
    with pytest.raises(FileExistsError):
        move_aside(training_state_in(tmp_path), tmp_path / "old")
    assert (tmp_path / "checkpoints").is_dir()
