"""swarmnode/testing/experiments/worktrees.py on a real git repository: a commit's own files in a
worktree while it is held, the worktree gone after, and the environment that imports from it."""
import subprocess

from swarmnode.testing.experiments.worktrees import environment_of, worktree_at


def git(repo, *args):
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def test_a_commit_is_checked_out_while_held_and_removed_after(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    for text in ("first", "second"):
        (repo / "file.txt").write_text(text)
        git(repo, "add", "file.txt")
        git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", text)
    first = git(repo, "rev-parse", "HEAD~1")
    with worktree_at(repo, first, tmp_path / "tree") as tree:
        assert (tree / "file.txt").read_text() == "first"  # that commit's files, not the checkout's
        assert environment_of(tree)["PYTHONPATH"] == str(tree)
    assert not (tmp_path / "tree").exists()
    assert str(tmp_path / "tree") not in git(repo, "worktree", "list")
    assert (repo / "file.txt").read_text() == "second"
