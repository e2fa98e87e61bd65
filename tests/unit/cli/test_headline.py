"""cli/headline.py: `swarmnode status` fits 80x24 (the headline), values written for people,
addresses whole; the live view's frames fit the terminal and say when the daemon stopped answering."""
import re

from rich.console import Console

from swarmnode.cli.format import histogram, human
from swarmnode.cli.headline import WatchState, headline_view, trimmed, headline_lines, watch_frame
from swarmnode.cli.render import status_view
from tests.unit.cli.helpers import ADDRESSES, realistic_status

REPR = re.compile(r"[{\[]'|\{\}|\[\]|': |\bNone\b|\bTrue\b|\bFalse\b")  # a Python dict / list repr or a bare None


def screen(renderable, width=80, height=24, crop=False) -> list[str]:
    console = Console(width=width, height=height, record=True, color_system=None)
    console.print(renderable, crop=crop)
    return console.export_text().splitlines()


def rows_on_a_terminal(lines: list[str], width: int = 80) -> int:
    """Rows the lines take on a terminal of `width` (one longer than it wraps there, whole)."""
    return sum(max(1, -(-len(line) // width)) for line in lines)


def test_headline_fits_80x24_with_the_numbers_an_operator_looks_at():
    lines = screen(headline_view(realistic_status()))
    assert rows_on_a_terminal(lines) <= 22
    assert [line for line in lines if len(line) > 80] == [ADDRESSES[0]]  # only the address, left whole for the terminal
    assert ADDRESSES[0] in lines  # copyable whole: on a line of its own, no ellipsis
    text = "\n".join(lines)
    assert not REPR.search(text), REPR.search(text)
    flat = " ".join(text.split())
    for expected in ("swarm swarmnode-local running up 25m", "joined through 1 initial peer",
                     "peers 3 (joining 1, running 2, 3 same base)", "policy v1234, 1240 steps, 1.18 s/step",
                     "0.688 (own groups 0.719) held-out accuracy 0.562", "own 0:95 1:1029 peers' 0:32 1:446 2:300 3 dropped",
                     "out 4960 groups in 8400 accepted, 7 rejected", "merging; 12 sent, 21 merged, 3 rejected",
                     "rollouts 3.5 MiB metrics 1.0 MiB checkpoint v00001200", "+1 more: swarmnode status --addrs",
                     "1 messages of another swarm, window or protocol version rejected",
                     "swarm swarmnode-local, swarm.window_s 30 s, protocol 1", "swarmnode status --full"):
        assert expected in flat, expected


def test_headline_names_problems_in_red_lines_that_wrap_whole():
    doc = realistic_status(join={"initial_peers": [ADDRESSES[0]], "joined": False, "attempts": 4,
                                 "last_error": "could not reach /ip4/127.0.0.1/tcp/1/p2p/12D3KooWx: connection refused"})
    doc["training"] = {**doc["training"], "phase": "failed: unknown task 'sum4'", "error": "unknown task 'sum4'", "running": False}
    doc["storage"] = {**doc["storage"], "checkpoint_failures": 2,
                      "last_checkpoint_error": "OSError: [Errno 28] No space left on device"}
    lines = screen(headline_view(doc))
    assert rows_on_a_terminal(lines) <= 24 and all(len(line) <= 80 for line in lines if line != ADDRESSES[0])
    flat = " ".join(" ".join(lines).split())
    assert "problems training failed: unknown task 'sum4'" in flat
    assert "not joined: could not reach /ip4/127.0.0.1/tcp/1/p2p/12D3KooWx: connection refused" in flat
    assert "2 checkpoint writes failed: OSError: [Errno 28] No space left on device" in flat
    assert "not yet (4 attempts)" in flat


def test_a_node_without_a_model_shows_no_training_figures():
    doc = realistic_status(rollouts=None)
    doc["training"] = {**doc["training"], "model": None}
    flat = " ".join(" ".join(screen(headline_view(doc))).split())
    assert "training no model configured" in flat and "sharing" not in flat and "problems" in flat


def test_headline_trimmed_to_a_short_terminal_keeps_state_and_problems():
    doc = realistic_status()
    doc["storage"] = {**doc["storage"], "checkpoint_failures": 1, "last_checkpoint_error": "OSError: disk full"}
    lines = screen(headline_view(doc, height=8, fold_addresses=True))
    assert len(lines) <= 8 and all(len(line) <= 80 for line in lines)
    assert lines[0].startswith("swarmnode 0.1.0") and any("checkpoint writes failed" in line for line in lines)
    # a folded address spans two rows and is never cut with an ellipsis
    assert "…" not in "".join(lines) and ADDRESSES[0] in "".join(lines)


def test_full_view_has_every_part_and_no_reprs():
    lines = screen(status_view(realistic_status()))
    text = "\n".join(lines)
    assert not REPR.search(text), REPR.search(text)
    assert ADDRESSES[0] in lines and ADDRESSES[1] in lines
    assert all(len(line) <= 80 for line in lines if line not in ADDRESSES)
    flat = " ".join(text.split())
    for part in ("staleness local 0:95 1:1029", "rollout gossip", "gradient summaries", "storage", "peers (3;",
                 "plan I/J 3/3", "messages rejected expired 2, unknown_key 1"):
        assert part in flat, part


def test_watch_frame_says_when_the_daemon_stopped_answering():
    state = WatchState()
    state.answered(realistic_status())
    frame = screen(watch_frame(state, height=23, width=80), crop=True)
    assert len(frame) <= 23 and frame[0].startswith("swarmnode 0.1.0") and ADDRESSES[0] in "".join(frame)
    state.failed("no swarmnode daemon answers at http://127.0.0.1:1 (connection refused)", now=0.0)
    state.failed("the same again", now=5.0)  # the first failure's time stays
    frame = screen(watch_frame(state, height=23, width=80), crop=True)
    assert len(frame) <= 23
    assert re.match(r"daemon not answering since \d\d:\d\d:\d\d \(last seen state running\); still trying", frame[0])
    assert frame[1].startswith("the same again") and any(line.startswith("swarmnode 0.1.0") for line in frame)
    state.answered(realistic_status())
    assert not any("not answering" in line for line in screen(watch_frame(state, 23, 80), crop=True))


def test_watch_frame_of_the_full_view_fits_the_terminal():
    state = WatchState()
    state.answered(realistic_status())
    frame = screen(watch_frame(state, height=23, width=80, full=True), crop=True)
    assert len(frame) <= 23 and frame[0].startswith("peer id")
    assert ADDRESSES[0] in "".join(frame) and "…" not in "".join(frame[:12])  # folded, never cut


def test_trimmed_keeps_order_and_marked_lines():
    lines = headline_lines(realistic_status())
    kept = trimmed(lines, height=3)
    assert [t.plain for t in kept][0].startswith("swarmnode") and len(kept) <= 3


def test_values_are_written_for_people():
    assert histogram({"10": 1, "2": 5, "0": 32}) == "0:32 2:5 10:1" and histogram(None) == "-"
    assert human({"arith": 5000, "sort": 3120}) == "arith 5000, sort 3120"
    assert human({"p": {"a": 1}}) == "p (a 1)" and human([]) == "none" and human(0.123456) == "0.1235"


def test_peers_of_another_base_are_counted_apart():
    doc = realistic_status()
    doc["peers"][0]["base_fingerprint"] = "0123456789abcdef"  # started from other weights
    doc["peers"][1]["base_fingerprint"] = ""  # a node without a model says no base
    flat = " ".join(" ".join(screen(headline_view(doc))).split())
    assert "peers 3 (joining 1, running 2, 1 same base, 1 other base)" in flat


def test_peers_of_other_protocol_versions_are_a_problem_naming_who_should_upgrade():
    from swarmnode.cli.status_text import problems

    doc = realistic_status()
    doc["incompatible_peers"] = [{"peer_id": "a", "protocol_versions": [2, 3], "upgrade": "this node"},
                                 {"peer_id": "b", "protocol_versions": [2, 2], "upgrade": "this node"},
                                 {"peer_id": "c", "protocol_versions": [0, 0], "upgrade": "peer"}]
    found = problems(doc)
    assert "2 peers speak newer protocol versions: upgrade swarmnode on this node" in found
    assert "1 peer runs an older swarmnode (skipped until upgraded)" in found


def test_the_network_line_names_the_libp2p_transport_and_not_the_default():
    status = realistic_status()
    flat = lambda s: " ".join("\n".join(screen(headline_view(s))).split())  # noqa: E731
    assert "libp2p:" not in flat(status)
    status["network"] = {**(status.get("network") or {}), "transport": "libp2p", "reachability": "public"}
    assert "network libp2p: public" in flat(status)


def test_steps_that_never_had_reward_spread_are_a_problem_only_when_they_last():
    from swarmnode.cli.status_text import FLAT_STEPS_PROBLEM, problems

    doc = realistic_status()
    doc["training"] = {**doc["training"], "steps_without_spread_in_a_row": FLAT_STEPS_PROBLEM - 1}
    assert not any("learned nothing" in p for p in problems(doc))
    doc["training"]["steps_without_spread_in_a_row"] = 886
    [line] = [p for p in problems(doc) if "learned nothing" in p]
    assert line.startswith("the last 886 steps learned nothing: every group's rewards were equal")
