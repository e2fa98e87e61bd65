"""cli/reset_training.py: `swarmnode reset-training` moves a home's training aside, asks first, and
refuses in one line while a daemon runs on the home."""
from typer.testing import CliRunner

from swarmnode.cli.app import app
from swarmnode.home import DaemonLock, NodeHome, init_home


def home_with_training(tmp_path) -> NodeHome:
    home = NodeHome(tmp_path / "home")
    init_home(home.root)
    (home.root / "checkpoints" / "v00000460").mkdir(parents=True)
    (home.root / "metrics.sqlite").write_text("m")
    (home.root / "rollouts.sqlite").write_text("r")
    return home


def reset(home: NodeHome, *flags: str, answer: str = ""):
    return CliRunner().invoke(app, ["reset-training", "--home", str(home.root), *flags], input=answer)


def aside_folders(home: NodeHome) -> list:
    return sorted(home.root.glob("old-training-*"))


def test_yes_moves_checkpoints_and_metrics_aside_and_keeps_keys_config_and_standing(tmp_path):
    home = home_with_training(tmp_path)
    keys = home.p2p_identity.read_bytes()
    result = reset(home, "--yes")
    assert result.exit_code == 0, result.output
    [aside] = aside_folders(home)
    assert (aside / "checkpoints" / "v00000460").is_dir() and (aside / "metrics.sqlite").is_file()
    assert not (home.root / "checkpoints").exists() and not (home.root / "metrics.sqlite").exists()
    assert home.p2p_identity.read_bytes() == keys and home.config.is_file() and (home.root / "rollouts.sqlite").is_file()
    assert f"moved checkpoints, metrics.sqlite to {aside}" in result.output and "same peer id" in result.output


def test_it_asks_first_and_a_no_moves_nothing(tmp_path):
    home = home_with_training(tmp_path)
    result = reset(home, answer="n\n")
    assert result.exit_code == 1 and "move them?" in result.output and "nothing moved" in result.output
    assert (home.root / "checkpoints").is_dir() and not aside_folders(home)
    assert reset(home, answer="y\n").exit_code == 0 and len(aside_folders(home)) == 1


def test_a_home_without_training_has_nothing_to_move(tmp_path):
    home = NodeHome(tmp_path / "home")
    init_home(home.root)
    result = reset(home, "--yes")
    assert result.exit_code == 0 and "nothing to move" in result.output and not aside_folders(home)


def test_refused_in_one_line_while_a_daemon_runs_on_the_home(tmp_path):
    home = home_with_training(tmp_path)
    lock = DaemonLock(home)
    lock.acquire()
    try:
        result = reset(home, "--yes")
    finally:
        lock.release()
    assert result.exit_code == 1 and len(result.output.strip().splitlines()) == 1
    assert f"is running with home {home.root}; stop it first" in result.output
    assert (home.root / "checkpoints").is_dir() and not aside_folders(home)


def test_a_folder_that_is_no_home_is_refused_in_one_line(tmp_path):
    result = reset(NodeHome(tmp_path), "--yes")
    assert result.exit_code == 2 and f"{tmp_path} is not a node home (no config.yaml)" in result.output
