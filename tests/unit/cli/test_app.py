"""cli/app.py's `status` against a real HTTP status endpoint: the headline by default (80x24),
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


def test_status_json_is_the_served_document(endpoint):
    url, served = endpoint
    assert json.loads(status(url, "--json")) == served["doc"]
