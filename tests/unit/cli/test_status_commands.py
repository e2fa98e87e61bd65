"""cli/status_commands.py's `status`, `peers` and `logs`; `status` against a real HTTP status endpoint: the headline by default (80x24),
`--full`, `--addrs` (only the multiaddrs, one a line), `--json` (the document as served)."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from typer.testing import CliRunner

from swarmnode.cli.app import app
from tests.unit.cli.helpers import ADDRESSES, realistic_status


@pytest.fixture
def endpoint():
    """A status endpoint on 127.0.0.1 serving a realistic document (the daemon's /status answer)."""
    served = {"doc": realistic_status()}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            body = json.dumps(served["doc"] if self.path == "/status" else {"peers": served["doc"]["peers"]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", served
    server.shutdown()
    server.server_close()


def status(url, *flags):
    result = CliRunner().invoke(app, ["status", "--url", url, *flags], env={"COLUMNS": "80", "LINES": "24"},
                                terminal_width=80)
    assert result.exit_code == 0, result.output
    return result.output


def test_status_prints_the_headline_within_80x24(endpoint):
    url, _ = endpoint
    lines = status(url).splitlines()
    assert sum(max(1, -(-len(line) // 80)) for line in lines) <= 24
    assert ADDRESSES[0] in lines and all(len(line) <= 80 for line in lines if line != ADDRESSES[0])
    assert lines[0].startswith("swarmnode 0.1.0  swarm swarmnode-local  running")


def test_status_full_prints_every_part(endpoint):
    url, _ = endpoint
    out = status(url, "--full")
    assert all(address in out.splitlines() for address in ADDRESSES)
    assert "rollout gossip" in out and "gradient summaries" in out and "peers (3;" in out and len(out.splitlines()) > 24


def test_status_addrs_prints_only_the_multiaddrs(endpoint):
    url, served = endpoint
    assert status(url, "--addrs") == "".join(f"{a}\n" for a in ADDRESSES)
    served["doc"] = realistic_status(multiaddrs=[], state="starting")
    result = CliRunner().invoke(app, ["status", "--url", url, "--addrs"])
    assert result.exit_code == 1 and result.stdout == ""
    assert "error: the daemon has no multiaddrs yet (state starting)" in result.output


def test_peers_lists_each_peer_and_says_so_when_there_is_none(endpoint):
    url, served = endpoint
    result = CliRunner().invoke(app, ["peers", "--url", url], terminal_width=80)
    assert result.exit_code == 0 and "peers (3;" in result.output
    served["doc"] = realistic_status(peers=[])
    result = CliRunner().invoke(app, ["peers", "--url", url], terminal_width=80)
    assert result.exit_code == 0
    assert result.output == "no peers yet: the node has not learnt of any (`swarmnode status` says how its join goes)\n"


def test_status_json_is_the_served_document(endpoint):
    url, served = endpoint
    assert json.loads(status(url, "--json")) == served["doc"]


def test_logs_of_a_home_where_no_node_ran_is_one_line_naming_the_path(tmp_path):
    result = CliRunner().invoke(app, ["logs", "--home", str(tmp_path)])
    assert result.exit_code == 1
    assert result.output == (f"error: no log at {tmp_path}/logs/node.log: no node has run with home {tmp_path} yet "
                             f"(start one with: swarmnode run --home {tmp_path})\n")


def test_logs_prints_the_last_lines(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "node.log").write_text("".join(f"2025-01-02 03:04:{i:02d} INFO swarmnode: line {i}\n" for i in range(30)))
    result = CliRunner().invoke(app, ["logs", "--home", str(tmp_path), "-n", "5"])
    assert result.exit_code == 0
    assert result.output.splitlines() == [f"2025-01-02 03:04:{i:02d} INFO swarmnode: line {i}" for i in range(25, 30)]
    assert len(CliRunner().invoke(app, ["logs", "--home", str(tmp_path)]).output.splitlines()) == 20  # the default


def test_logs_follow_prints_new_lines_as_they_come_and_quits_on_ctrl_c(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    log = tmp_path / "logs" / "node.log"
    log.parent.mkdir()
    log.write_text("old line\n")
    # The follower gets Ctrl-C as a terminal gives it: a suite started as a background job (`cmd &`
    # in a script) has SIGINT ignored, and an ignored signal stays ignored across exec, so the
    # follower never saw it (faulthandler's stack showed it still polling 30 s later).
    def default_sigint():
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    proc = subprocess.Popen([sys.executable, "-X", "faulthandler", "-m", "swarmnode", "logs", "-f", "-n", "1",
                             "--home", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_sigint)
    try:
        assert proc.stdout.readline() == "old line\n"
        with open(log, "a") as f:
            f.write("new line\n")
        assert proc.stdout.readline() == "new line\n"  # flushed as it comes, not at exit
        log.rename(log.with_name("node.log.1"))  # rotated: the follower goes on with the new file
        time.sleep(0.2)
        log.write_text("after rotation\n")
        assert proc.stdout.readline() == "after rotation\n"
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)  # faulthandler prints every thread's stack to stderr
            proc.wait(timeout=10)
            raise AssertionError(f"still running 30 s after Ctrl-C:\n{proc.stderr.read()}") from None
        assert code == 0 and proc.stderr.read() == ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_hints_for_a_bootstrap_nodes_home_name_swarmnode_bootstrap(tmp_path):
    from swarmnode.home import NodeHome, write_bootstrap_flags

    write_bootstrap_flags(NodeHome(tmp_path), {"--swarm": "my-swarm"})
    result = CliRunner().invoke(app, ["logs", "--home", str(tmp_path)])
    assert result.exit_code == 1 and result.output.endswith(f"(start one with: swarmnode bootstrap --home {tmp_path})\n")
    result = CliRunner().invoke(app, ["status", "--home", str(tmp_path)])
    assert result.exit_code == 1
    assert result.output == (f"error: no swarmnode daemon is running for home {tmp_path}, a bootstrap node's (its flags: "
                             f"{tmp_path}/bootstrap.json); start it with: swarmnode bootstrap --home {tmp_path}\n")
    node_home = tmp_path / "node"
    result = CliRunner().invoke(app, ["status", "--home", str(node_home)])
    assert result.output == (f"error: no swarmnode daemon is running for home {node_home} "
                             f"(start one with: swarmnode run --home {node_home})\n")


def test_status_of_a_bootstrap_node_shows_what_it_serves_and_no_training(endpoint):
    from tests.unit.cli.test_bootstrap_view import bootstrap_status

    url, served = endpoint
    served["doc"] = bootstrap_status()
    for flags in ((), ("--full",)):
        text = " ".join(status(url, *flags).split())
        assert "relay" in text and "routing table 5" in text
        assert "not running yet" not in text and "training" not in text and "held-out" not in text
