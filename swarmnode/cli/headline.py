"""The headline of `swarmnode status`: what a node operator looks at first, in at most ~20 lines
of 80 columns, values written for people (no I/O: these only build rich Text lines).

Every line is one Text; an address line is never wrapped or cut by rich (`address_line`), so a
terminal's own soft wrap keeps it copyable whole.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from rich.console import Console, Group
from rich.text import Text

from swarmnode.cli.bootstrap_view import is_bootstrap, records_text, relay_text, swarm_parameters_text
from swarmnode.cli.format import age, counts, data_size, histogram, number
from swarmnode.cli.lines import address_line
from swarmnode.cli.render import status_view
from swarmnode.cli.status_text import network_text, peers_text, problems

LABEL_WIDTH = 11
MORE_HINT = "more: swarmnode status --full · addresses: --addrs · peers: swarmnode peers"


@dataclass(frozen=True)
class HeadlineLine:
    """One line of the headline; `keep` lines (state, problems) survive trimming to a short terminal."""

    text: Text
    keep: bool = False


def labelled(label: str, value: str | Text, style: str = "", wrap: bool = False) -> Text:
    """`label` in a column of its own, then the value: on one line, cut with an ellipsis at the
    width unless `wrap` (a problem is read whole)."""
    line = Text(f"{label:<{LABEL_WIDTH}}", style="bold", no_wrap=not wrap, overflow="fold" if wrap else "ellipsis")
    line.append(value if isinstance(value, Text) else Text(value, style=style))
    return line


def title_line(s: dict[str, Any]) -> Text:
    line = Text(f"swarmnode {s.get('software_version', '?')}  swarm {s.get('swarm', '?')}  ", style="bold")
    line.append(str(s.get("state", "?")), style="green" if s.get("state") == "running" else "yellow")
    line.append(f"  up {age(s.get('uptime_s') or 0.0)}")
    return line


def join_text(s: dict[str, Any]) -> str:
    join = s.get("join") or {}
    if not join.get("initial_peers"):
        return "bootstrap node (no initial peers)"
    if join.get("joined"):
        n = len(join["initial_peers"])
        if not s.get("peers"):  # the log says it joined once a peer's record arrives
            return f"reached {'an initial peer' if n == 1 else 'one of its initial peers'}; no peer record yet"
        return f"joined through {n} initial peer{'s' if n != 1 else ''}"
    return f"not yet ({join.get('attempts', 0)} attempts)"


def training_lines(t: dict[str, Any]) -> list[Text]:
    if not t.get("model"):
        return [labelled("training", Text("no model configured", style="dim"))]
    head = str(t.get("phase") or "-")
    if t.get("policy_version") is not None:
        head += f"; policy v{t['policy_version']}, {number(t.get('steps'))} steps, {number(t.get('seconds_per_step'))} s/step"
    reward = (f"{number(t.get('reward_mean'), '.3f')} (own groups {number(t.get('local_reward_mean'), '.3f')})  "
              f"held-out accuracy {number(t.get('heldout_accuracy'), '.3f')}")
    staleness = (f"own {histogram(t.get('staleness_local'))}  peers' {histogram(t.get('staleness_external'))}  "
                 f"{number(t.get('dropped_stale'))} dropped")
    return [labelled("model", str(t["model"])), labelled("training", head), labelled("reward", reward),
            labelled("staleness", staleness)]


def sharing_text(r: dict[str, Any] | None) -> str:
    if not r:
        return "off (no model)"
    return (f"out {number(r.get('groups_published'))} groups  in {number(r.get('groups_accepted'))} accepted, "
            f"{number(r.get('groups_rejected'))} rejected  gossip {100 * (r.get('gossip_time_share') or 0):.1f}% CPU")


def summaries_text(m: dict[str, Any]) -> str:
    if not m.get("enabled"):
        return "off"
    state = "merging" if m.get("active") else "no same-base peer yet"
    rejected = sum((m.get("rejected") or {}).values())
    return (f"{state}; {m.get('sent', 0)} sent, {m.get('merged', 0)} merged, {rejected} rejected; "
            f"{m.get('outer_steps', 0)} outer steps")


def storage_text(st: dict[str, Any]) -> str:
    return (f"rollouts {data_size(st.get('rollouts_bytes') or 0)}  metrics {data_size(st.get('metrics_bytes') or 0)}  "
            f"checkpoint {st.get('last_checkpoint') or '-'}")


def messages_text(s: dict[str, Any]) -> str:
    messages = s.get("messages") or {}
    accepted, rejected = messages.get("accepted") or {}, messages.get("rejected") or {}
    text = f"{sum(accepted.values())} accepted, {sum(rejected.values())} rejected"
    return text + (f" ({counts(_top(rejected, 3))})" if rejected else "")


def _top(table: dict[str, int], n: int) -> dict[str, int]:
    return dict(sorted(table.items(), key=lambda kv: -kv[1])[:n])


def headline_lines(s: dict[str, Any], fold_addresses: bool = False) -> list[HeadlineLine]:
    """The headline, line by line: state, identity, addresses, join, peers, training, sharing,
    summaries, storage, messages, problems, and where to see more."""
    addrs = s.get("multiaddrs") or []
    lines = [HeadlineLine(title_line(s), keep=True), HeadlineLine(labelled("peer id", s.get("peer_id", "?"))),
             HeadlineLine(labelled("swarm", swarm_parameters_text(s)))]
    if addrs:
        more = f" (+{len(addrs) - 1} more: swarmnode status --addrs)" if len(addrs) > 1 else ""
        lines += [HeadlineLine(labelled("address", f"to join through it{more}:")),
                  HeadlineLine(address_line(addrs[0], fold_addresses))]
    lines += [HeadlineLine(labelled("network", network_text(s))), HeadlineLine(labelled("join", join_text(s))),
              HeadlineLine(labelled("peers", peers_text(s)))]
    training = s.get("training") or {}
    if is_bootstrap(s):  # what it serves, in place of training (it runs no model)
        lines += [HeadlineLine(labelled("records", records_text(s))), HeadlineLine(labelled("relay", relay_text(s)))]
    else:
        lines += [HeadlineLine(line) for line in training_lines(training)]
    if training.get("model"):
        lines += [HeadlineLine(labelled("sharing", sharing_text(s.get("rollouts")))),
                  HeadlineLine(labelled("summaries", summaries_text(s.get("summaries") or {}))),
                  HeadlineLine(labelled("storage", storage_text(s.get("storage") or {})))]
    lines.append(HeadlineLine(labelled("messages", messages_text(s))))
    found = problems(s)
    if found:
        lines += [HeadlineLine(labelled("problems" if i == 0 else "", p, style="red", wrap=True), keep=True) for i, p in enumerate(found)]
    else:
        lines.append(HeadlineLine(labelled("problems", Text("none", style="green"))))
    lines.append(HeadlineLine(Text(MORE_HINT, style="dim")))
    return lines


def rows_taken(text: Text, width: int) -> int:
    """Terminal rows `text` takes at `width` (a line that is not wrapped takes one)."""
    return len(text.wrap(Console(width=width, color_system=None), width))


def trimmed(lines: list[HeadlineLine], height: int | None, width: int = 80) -> list[Text]:
    """The lines that fit `height` rows: all of them, or the first ones plus every `keep` line."""
    rows = [rows_taken(line.text, width) for line in lines]
    if height is None or sum(rows) <= height:
        return [line.text for line in lines]
    room = max(0, height - sum(r for line, r in zip(lines, rows) if line.keep))
    out = []
    for line, r in zip(lines, rows):
        if line.keep:
            out.append(line.text)
        elif r <= room:
            out.append(line.text)
            room -= r
        else:
            room = 0  # keep the order: nothing below a line that did not fit
    return out


def headline_view(s: dict[str, Any], height: int | None = None, width: int = 80, fold_addresses: bool = False) -> Group:
    return Group(*trimmed(headline_lines(s, fold_addresses), height, width))


@dataclass
class WatchState:
    """What `status --watch` knows: the last document, and since when the daemon stopped answering."""

    last: dict[str, Any] | None = None
    failing_since: float | None = None
    error: str | None = None

    def answered(self, doc: dict[str, Any]) -> None:
        self.last, self.failing_since, self.error = doc, None, None

    def failed(self, error: str, now: float) -> None:
        if self.failing_since is None:
            self.failing_since = now
        self.error = error


def not_answering_lines(state: WatchState) -> list[Text]:
    """Two red lines: since when the daemon has not answered, and the last error (cut to one line)."""
    since = time.strftime("%H:%M:%S", time.localtime(state.failing_since or 0.0))
    last = f"last seen state {state.last.get('state', '?')}" if state.last else "it never answered"
    return [Text(f"daemon not answering since {since} ({last}); still trying", style="bold red"),
            Text(state.error or "", style="red", no_wrap=True, overflow="ellipsis")]


def watch_frame(state: WatchState, height: int, width: int, full: bool = False) -> Group:
    """One frame of the live view, at most `height` rows of `width`: the headline (`full`: every
    line of the full view that fits), and while the daemon does not answer, red lines saying so
    above the last headline seen (dimmed)."""
    lines = (full_lines(state.last, width) if full else headline_lines(state.last, fold_addresses=True)) if state.last else []
    if state.failing_since is None:
        return Group(*trimmed(lines, height, width))
    warning = not_answering_lines(state)
    rest = trimmed(lines, max(0, height - len(warning)), width)
    for line in rest:
        line.stylize("dim")
    return Group(*warning, *rest)


def full_lines(s: dict[str, Any], width: int) -> list[HeadlineLine]:
    """The full view as lines of `width` (for a live view to trim), its red lines kept."""
    console = Console(width=width, color_system=None)
    rendered = console.render_lines(status_view(s, fold_addresses=True), console.options.update(width=width), pad=False)
    out = []
    for segments in rendered:
        text = Text()
        for segment in segments:
            text.append(segment.text, style=segment.style)
        out.append(HeadlineLine(text, keep=any(seg.style is not None and "red" in str(seg.style) for seg in segments)))
    return out
