"""`swarmnode status --watch` in a real 80x24 terminal (tmux) against a real daemon: the headline
fits and is redrawn in place; after the daemon is killed the screen says it is not answering
(and keeps trying); Ctrl-C ends the watch cleanly."""
import os
import shutil
import signal
import subprocess
import sys

import pytest

from tests.integration.conftest import wait_until

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed: no terminal to drive")


class Terminal:
    """A detached 80x24 tmux session on a private socket, running one command."""

    def __init__(self, socket_path, command: list[str], env: dict[str, str]):
        self.base = ["tmux", "-S", str(socket_path)]
        exports = [f"{k}={v}" for k, v in env.items()]
        subprocess.run([*self.base, "new-session", "-d", "-x", "80", "-y", "24", "-s", "watch",
                        "env", *exports, *command], check=True, timeout=30)

    def screen(self) -> list[str]:
        out = subprocess.run([*self.base, "capture-pane", "-p", "-t", "watch"], capture_output=True, text=True, timeout=30)
        return out.stdout.splitlines() if out.returncode == 0 else []

    def alive(self) -> bool:
        return subprocess.run([*self.base, "has-session", "-t", "watch"], capture_output=True, timeout=30).returncode == 0

    def keys(self, *keys: str) -> None:
        subprocess.run([*self.base, "send-keys", "-t", "watch", *keys], check=True, timeout=30)

    def close(self) -> None:
        subprocess.run([*self.base, "kill-server"], capture_output=True, timeout=30)


def test_watch_fits_80x24_and_says_when_the_daemon_stops_answering(make_swarm, tmp_path):
    swarm = make_swarm(1)
    node = swarm.nodes[0]
    env = {"PYTHONPATH": os.environ.get("PYTHONPATH", ""), "TERM": "xterm-256color"}
    # the shell outlives the watch (its trap lets Ctrl-C reach only the watch) and keeps the pane
    # open to read the last screen and the exit code
    command = ["sh", "-c", f"trap : INT; {sys.executable} -m swarmnode status --watch --home {node.home.root}; "
                           "echo watch exited with $?; sleep 600"]
    terminal = Terminal(tmp_path / "tmux.sock", command, env)
    try:
        screen = wait_until(lambda: [line for line in terminal.screen() if line.strip()]
                            if any("messages" in line for line in terminal.screen()) else None,
                            timeout=60, what="the headline on the 80x24 screen")
        assert screen[0].startswith("swarmnode ") and " running " in screen[0]
        assert any(line.startswith("peer id") for line in screen) and any(line.startswith("join") for line in screen)
        assert any(line.startswith("problems") for line in screen) and len(terminal.screen()) <= 24
        assert not any(line.rstrip().endswith("...") for line in screen)  # not cut off at the bottom

        swarm.kill(0, signal.SIGKILL)
        stopped = wait_until(lambda: [line for line in terminal.screen() if "daemon not answering since" in line],
                             timeout=60, what="the not-answering line on screen")
        assert "(last seen state running); still trying" in stopped[0]
        print("\n".join(terminal.screen()))  # what the user sees, for the test log
        assert terminal.alive() and not any("watch exited" in line for line in terminal.screen())

        terminal.keys("C-c")
        ended = wait_until(lambda: [line for line in terminal.screen() if "watch exited with" in line],
                           timeout=60, what="the watch to end on Ctrl-C")
        assert ended[0].strip() == "watch exited with 0"
        assert not any("Traceback" in line for line in terminal.screen())
    finally:
        terminal.close()
