import random

import torch

from swarmnode.store.checkpoints import (
    BackgroundCheckpointer,
    TrainingState,
    latest_checkpoint,
    load_checkpoint,
    save_checkpoint,
)


def model_and_optimizer(seed):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model(torch.randn(5, 4)).sum().backward()
    optimizer.step()
    return model, optimizer


def test_round_trip_restores_weights_optimizer_rng_and_state(tmp_path):
    model, optimizer = model_and_optimizer(0)
    random.seed(42)
    torch.manual_seed(7)
    path = save_checkpoint(tmp_path, model.state_dict(), optimizer.state_dict(), TrainingState(5, 6, 160, {"k": 1}))
    expected_torch, expected_python = torch.rand(3), random.random()

    fresh, fresh_opt = model_and_optimizer(1)
    state = load_checkpoint(latest_checkpoint(tmp_path), fresh, fresh_opt)
    assert path == latest_checkpoint(tmp_path)
    assert (state.version, state.steps, state.stream_position, state.extra) == (5, 6, 160, {"k": 1})
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), fresh.state_dict().values()))
    s1, s2 = optimizer.state_dict()["state"], fresh_opt.state_dict()["state"]
    assert all(torch.equal(s1[i]["exp_avg"], s2[i]["exp_avg"]) for i in s1)
    assert torch.equal(torch.rand(3), expected_torch) and random.random() == expected_python


def test_only_complete_checkpoints_are_latest_and_old_ones_pruned(tmp_path):
    model, optimizer = model_and_optimizer(0)
    for version in (1, 2, 3):
        save_checkpoint(tmp_path, model.state_dict(), optimizer.state_dict(), TrainingState(version, version, 0, {}))
    (tmp_path / ".tmp-v00000004-1").mkdir()  # a write that died half way
    assert latest_checkpoint(tmp_path).name == "v00000003"
    assert sorted(p.name for p in tmp_path.glob("v*")) == ["v00000002", "v00000003"]


def test_background_checkpointer_snapshots_before_later_updates(tmp_path):
    model, optimizer = model_and_optimizer(0)
    saved = {k: v.clone() for k, v in model.state_dict().items()}
    writer = BackgroundCheckpointer(tmp_path)
    writer.save(model, optimizer, TrainingState(1, 1, 0, {}))
    with torch.no_grad():
        for p in model.parameters():
            p.add_(1.0)  # the trainer goes on while the write happens
    writer.wait()
    assert writer.last_error is None and writer.consecutive_failures == 0
    fresh, fresh_opt = model_and_optimizer(1)
    load_checkpoint(latest_checkpoint(tmp_path), fresh, fresh_opt)
    assert all(torch.equal(saved[k], v) for k, v in fresh.state_dict().items())


def test_loading_keeps_the_running_optimizers_fused_flag(tmp_path):
    model, optimizer = model_and_optimizer(0)  # saved by an unfused AdamW (as checkpoints before fused were)
    save_checkpoint(tmp_path, model.state_dict(), optimizer.state_dict(), TrainingState(1, 1, 0, {}))
    torch.manual_seed(1)
    fresh = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2))
    fused = torch.optim.AdamW(fresh.parameters(), lr=1e-2, fused=True)
    load_checkpoint(latest_checkpoint(tmp_path), fresh, fused)
    assert all(group["fused"] is True for group in fused.param_groups)
    s1, s2 = optimizer.state_dict()["state"], fused.state_dict()["state"]
    assert all(torch.equal(s1[i]["exp_avg_sq"], s2[i]["exp_avg_sq"]) for i in s1)
    fresh(torch.randn(5, 4)).sum().backward()
    fused.step()  # the fused kernel accepts the loaded state


def test_background_checkpointer_counts_failures_in_a_row_and_resets_on_success(tmp_path, caplog):
    model, optimizer = model_and_optimizer(0)
    blocker = tmp_path / "in-the-way"
    blocker.write_text("a file where the checkpoints folder should be")
    writer = BackgroundCheckpointer(blocker)
    for version in (1, 2):
        writer.save(model, optimizer, TrainingState(version, version, 0, {}))
        writer.wait()
        assert writer.consecutive_failures == version
    assert writer.last_path is None and writer.last_error.startswith("FileExistsError: ")
    failures = [r.getMessage() for r in caplog.records if r.name == "swarmnode.checkpoints"]
    assert len(failures) == 2 and f"{blocker / 'v00000002'} failed (2 in a row): FileExistsError" in failures[1]
    assert "\n" not in failures[1]

    blocker.unlink()
    writer.save(model, optimizer, TrainingState(3, 3, 0, {}))
    writer.wait()
    assert (writer.consecutive_failures, writer.last_error) == (0, None)
    assert writer.last_path == latest_checkpoint(blocker) == blocker / "v00000003"


def test_a_failed_write_leaves_no_half_written_folder(tmp_path, monkeypatch):
    model, optimizer = model_and_optimizer(0)

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("swarmnode.store.checkpoints.save_file", disk_full)
    writer = BackgroundCheckpointer(tmp_path)
    writer.save(model, optimizer, TrainingState(1, 1, 0, {}))
    writer.wait()
    assert writer.last_error == "OSError: [Errno 28] No space left on device"
    assert list(tmp_path.iterdir()) == []


def test_a_damaged_latest_pointer_falls_back_to_the_newest_complete_checkpoint(tmp_path):
    from swarmnode.store.checkpoints import latest_checkpoint

    (tmp_path / "latest").write_bytes(b"\xff\xfe\x00garbage")
    assert latest_checkpoint(tmp_path) is None
    for name in ("v00000010", "v00000020", "v00000030"):
        (tmp_path / name).mkdir()
        if name != "v00000030":  # no state.json: not a complete checkpoint
            (tmp_path / name / "state.json").write_text("{}")
    assert latest_checkpoint(tmp_path) == tmp_path / "v00000020"
    (tmp_path / "latest").write_text("v00000099")  # points at nothing
    assert latest_checkpoint(tmp_path) == tmp_path / "v00000020"
    (tmp_path / "latest").write_text("v00000010")
    assert latest_checkpoint(tmp_path) == tmp_path / "v00000010"
