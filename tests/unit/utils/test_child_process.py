"""utils/child_process.py: a child imports the swarmnode package its parent runs."""
from swarmnode.utils import child_process


def test_a_child_imports_its_parents_package_never_the_working_folders(tmp_path, monkeypatch):
    """python_module_command + child_environment, from a folder holding a `swarmnode/` of its own
    (a home folder with the clone in it): the child imports the package its parent runs."""
    import os
    import subprocess

    (tmp_path / "swarmnode").mkdir()
    (tmp_path / "swarmnode" / "__init__.py").write_text("raise ImportError('the working folder was imported')\n")
    (tmp_path / "swarmnode" / "__main__.py").write_text("")
    argv = child_process.python_module_command("swarmnode.testing.other_version", "--help")
    proc = subprocess.run(argv[:2] + ["-c", "import swarmnode, sys; print(swarmnode.__file__)"], cwd=tmp_path,
                          env=child_process.child_environment({"SWARMNODE_X": "1"}), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(child_process.PACKAGE_ROOT / "swarmnode" / "__init__.py")
    assert child_process.child_environment({"SWARMNODE_X": "1"})["SWARMNODE_X"] == "1"
    # An installed package's site-packages never goes before the standard library.
    monkeypatch.setattr(child_process, "PACKAGE_ROOT", tmp_path / "lib" / "site-packages")
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    assert child_process.child_environment()["PYTHONPATH"] == "/elsewhere"
    assert argv[1] == "-P" and os.path.samefile(argv[0], child_process.sys.executable)
