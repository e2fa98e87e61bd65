"""The `swarmnode` command: init, run, bootstrap, status, peers, logs, swarm local.

The CLI holds no logic the daemon needs: it parses flags, calls into swarmnode.node /
swarmnode.status, and prints. Every user mistake ends as one line on stderr and exit code 2,
a command that could not do its job (no daemon answers, say) with exit code 1; never a traceback.
"""
from __future__ import annotations

import enum
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.live import Live

from swarmnode import __version__
from swarmnode.cli.help import HelpCommand, HelpGroup
from swarmnode.cli.render import peers_table
from swarmnode.cli.start import (
    FAILED, check_before_start, check_log_level, fail, load_run_config, run_daemon_until_stopped)
from swarmnode.config import ConfigError, load_config
from swarmnode.home import NodeHome, home_source, resolve_home

app = typer.Typer(
    name="swarmnode",
    help="A node for decentralized peer-to-peer RL post-training of language models.",
    no_args_is_help=True,
    add_completion=False,
    cls=HelpGroup,
    pretty_exceptions_enable=False,
)
swarm_app = typer.Typer(help="Run swarms of nodes.", no_args_is_help=True, cls=HelpGroup)
app.add_typer(swarm_app, name="swarm")
bench_app = typer.Typer(help="Measure this machine.", no_args_is_help=True, cls=HelpGroup)
app.add_typer(bench_app, name="bench")

HomeOption = typer.Option(None, "--home", metavar="DIR", help="node home (default: $SWARMNODE_HOME or ~/.swarmnode)")
class Transport(str, enum.Enum):
    """network.transport as a flag (typer offers an enum's values as the choices)."""

    hivemind = "hivemind"
    libp2p = "libp2p"


RARE = "Rarely needed"  # the help panel of `run` options most nodes leave alone


@app.command(cls=HelpCommand)
def version() -> None:
    """Print the software and protocol versions."""
    from swarmnode.protocol import codec

    lowest, highest = codec.SUPPORTED_PROTOCOL_VERSIONS
    spoken = f"v{lowest}" if lowest == highest else f"v{lowest}–v{highest}"
    typer.echo(f"swarmnode {__version__} (protocol {spoken})")


@app.command(cls=HelpCommand)
def init(
    home: Optional[Path] = HomeOption,
    config: Optional[Path] = typer.Option(
        None, "--config", metavar="FILE", help="YAML to copy as the home's config (default: configs/default.yaml)"),
) -> None:
    """Create a node home: keys and config.yaml (never overwrites keys).

    The keys are an Ed25519 node key and a libp2p identity; `swarmnode run` uses the home.
    """
    from swarmnode.home import init_home
    from swarmnode.identity import PASSPHRASE_ENV

    root = resolve_home(home)
    text = None
    if config is not None:
        try:
            load_config(config, environ={})  # refuse to copy a config the daemon would reject
        except ConfigError as e:
            fail(str(e))
        text = config.read_text(encoding="utf-8")
    try:
        result = init_home(root, text)
    except OSError as e:
        fail(f"cannot create node home {root}: {e}")
    for line in result.created:
        typer.echo(f"created {line}")
    for line in result.kept:
        typer.echo(f"kept existing {line}")
    from swarmnode.identity import KeyFileError, peer_id_from_ed25519
    from swarmnode.identity.keys import load_p2p_identity

    try:
        typer.echo(f"peer id: {peer_id_from_ed25519(load_p2p_identity(result.home.p2p_identity).public_bytes)}")
    except KeyFileError as e:
        fail(str(e))
    if any(line.startswith("node key") for line in result.created):
        if os.environ.get(PASSPHRASE_ENV):
            typer.echo(f"the node key is encrypted with {PASSPHRASE_ENV}; set it for `swarmnode run` too")
        else:
            typer.echo(f"the node key is not encrypted (set {PASSPHRASE_ENV} during init to encrypt it)")


@app.command(cls=HelpCommand)
def run(
    home: Optional[Path] = HomeOption,
    config: Optional[Path] = typer.Option(None, "--config", metavar="FILE", help="config (default: <home>/config.yaml)"),
    initial_peer: list[str] = typer.Option(
        [], "--initial-peer", metavar="MULTIADDR", help="a peer to join through (repeatable)"),
    host_port: Optional[int] = typer.Option(
        None, "--host-port", min=0, max=65535, metavar="PORT", help="the node's TCP port (0: any)", rich_help_panel=RARE),
    transport: Optional[Transport] = typer.Option(
        None, "--transport", metavar="NAME", help="hivemind or libp2p", rich_help_panel=RARE),
    status_port: Optional[int] = typer.Option(
        None, "--status-port", min=0, max=65535, metavar="PORT", help="status HTTP port", rich_help_panel=RARE),
    client_mode: Optional[bool] = typer.Option(
        None, "--client-mode/--no-client-mode", help="accept no inbound connections", rich_help_panel=RARE),
    log_level: str = typer.Option(
        "INFO", "--log-level", metavar="LEVEL", help="DEBUG, INFO, WARNING or ERROR", rich_help_panel=RARE),
    slowdown: Optional[float] = typer.Option(
        None, "--slowdown", metavar="X", help="run X times slower (X >= 1)", rich_help_panel=RARE),
    keep_serving: Optional[bool] = typer.Option(
        None, "--keep-serving", rich_help_panel=RARE, help="on a training failure, serve on without training"),
) -> None:
    """Run the node daemon in the foreground (Ctrl-C stops it cleanly).

    Every config field can also be set as SWARMNODE__SECTION__FIELD=value (docs/configuration.md).
    """
    root = resolve_home(home)
    node_home = NodeHome(root)
    check_log_level(log_level)
    overrides: dict[str, Any] = {}
    if initial_peer:
        overrides["swarm.initial_peers"] = list(initial_peer)
    if status_port is not None:
        overrides["status.port"] = status_port
    if client_mode is not None:
        overrides["network.client_mode"] = client_mode
    if transport is not None:
        overrides["network.transport"] = transport.value
    if slowdown is not None:
        if problem := _slowdown_problem(slowdown):  # named as the flag, not as a line of the config file
            fail(f"--slowdown: {problem}")
        overrides["training.slowdown"] = slowdown
    if keep_serving is not None:
        overrides["training.keep_serving"] = keep_serving
    config_path = config if config is not None else node_home.config
    if config is not None and not config.is_file():
        fail(f"--config {config}: file not found; check the path")
    if config is None and not node_home.config.exists():
        fail(f"{root} is not a node home (no config.yaml); create it with: swarmnode init --home {root}")
    cfg, sources = load_run_config(config_path, overrides, RUN_FLAGS, (host_port, "--host-port"))
    check_before_start(cfg, sources, root, home_source(home))
    run_daemon_until_stopped(cfg, sources, node_home, log_level)


RUN_FLAGS = {"swarm.initial_peers": "--initial-peer", "status.port": "--status-port",
             "network.client_mode": "--client-mode", "training.slowdown": "--slowdown",
             "training.keep_serving": "--keep-serving", "network.transport": "--transport"}


@app.command(cls=HelpCommand)
def bootstrap(
    home: Optional[Path] = typer.Option(
        None, "--home", metavar="DIR", help="its home, made on first start (default: ~/.swarmnode-bootstrap)"),
    port: Optional[int] = typer.Option(
        None, "--port", min=1, max=65535, metavar="PORT", help="TCP port on every interface (default: 7100)"),
    announce: list[str] = typer.Option(
        [], "--announce", metavar="MULTIADDR", help="public address users dial, e.g. /dns4/HOST/tcp/7100 (repeatable)"),
    initial_peer: list[str] = typer.Option(
        [], "--initial-peer", metavar="MULTIADDR", help="another bootstrap node of the swarm (repeatable)"),
    swarm: Optional[str] = typer.Option(None, "--swarm", metavar="NAME", help="the swarm it serves (default: swarmnode-public)"),
    transport: Optional[Transport] = typer.Option(
        None, "--transport", metavar="NAME", help="hivemind or libp2p", rich_help_panel=RARE),
    status_port: Optional[int] = typer.Option(
        None, "--status-port", min=0, max=65535, metavar="PORT", help="status HTTP port", rich_help_panel=RARE),
    log_level: str = typer.Option(
        "INFO", "--log-level", metavar="LEVEL", help="DEBUG, INFO, WARNING or ERROR", rich_help_panel=RARE),
) -> None:
    """Run a bootstrap node: a DHT server at a fixed address (no model).

    Nodes join the swarm through it. Its home (keys, and config.yaml from configs/bootstrap.yaml)
    is made on first start and keeps its peer id across restarts. See docs/operators.md.
    """
    from swarmnode.cli.bootstrap import (
        BOOTSTRAP_FLAGS, DEFAULT_BOOTSTRAP_HOME, announce_problem, bootstrap_overrides, user_address_lines)

    check_log_level(log_level)
    if problem := announce_problem(announce):
        fail(problem)
    root = (home if home is not None else DEFAULT_BOOTSTRAP_HOME).expanduser().resolve()
    peer_id = _make_bootstrap_home(root)
    node_home = NodeHome(root)
    overrides = bootstrap_overrides(announce, initial_peer, swarm, status_port)
    if transport is not None:
        overrides["network.transport"] = transport.value
    cfg, sources = load_run_config(node_home.config, overrides, BOOTSTRAP_FLAGS, (port, "--port"))
    if cfg.model.name_or_path:
        fail(f"{node_home.config} sets model.name_or_path ({cfg.model.name_or_path}): it is the home of a node "
             "that trains; give the bootstrap node a home of its own (--home DIR)")
    if cfg.network.client_mode:
        fail(f"network.client_mode is true (from {sources.of('network.client_mode')}): a bootstrap node must "
             f"accept connections; {sources.fix('network.client_mode')} to false")
    check_before_start(cfg, sources, root, "--home" if home is not None else f"the default home {DEFAULT_BOOTSTRAP_HOME}")
    for line in user_address_lines(cfg.network.announce_maddrs, cfg.network.host_maddrs, peer_id):
        typer.echo(line)
    run_daemon_until_stopped(cfg, sources, node_home, log_level)


def _make_bootstrap_home(root: Path) -> str:
    """Create what is missing in a bootstrap node's home (as `init` does, with configs/bootstrap.yaml);
    return its peer id."""
    from swarmnode.cli.bootstrap import BOOTSTRAP_CONFIG
    from swarmnode.config import bundled_config_path
    from swarmnode.home import init_home
    from swarmnode.identity import KeyFileError, peer_id_from_ed25519
    from swarmnode.identity.keys import load_p2p_identity

    try:
        result = init_home(root, bundled_config_path(BOOTSTRAP_CONFIG).read_text(encoding="utf-8"))
        peer_id = peer_id_from_ed25519(load_p2p_identity(result.home.p2p_identity).public_bytes)
    except OSError as e:
        fail(f"cannot create the bootstrap node's home {root}: {e.strerror or e}; pass another --home")
    except KeyFileError as e:
        fail(str(e))
    for line in result.created:
        typer.echo(f"created {line}")
    return peer_id


def _fetch_or_exit(home: Optional[Path], url: Optional[str], path: str) -> dict[str, Any]:
    from swarmnode.status.client import NoDaemon, fetch, status_url_for_home

    try:
        base = url or status_url_for_home(NodeHome(resolve_home(home)))
        return fetch(base, path)
    except NoDaemon as e:
        fail(str(e), FAILED)


@app.command(cls=HelpCommand)
def status(
    home: Optional[Path] = HomeOption,
    url: Optional[str] = typer.Option(None, "--url", metavar="URL", help="status endpoint, e.g. http://127.0.0.1:8765"),
    full: bool = typer.Option(False, "--full", help="everything: training, gossip, summaries, storage, peers"),
    addrs: bool = typer.Option(False, "--addrs", help="only this node's multiaddrs, one a line (for scripts)"),
    as_json: bool = typer.Option(False, "--json", help="the status document (docs/status.md)"),
    watch: bool = typer.Option(False, "--watch", help="live view that fits the terminal (Ctrl-C quits)"),
) -> None:
    """Show a running daemon's status on one screen (--full: all of it)."""
    from swarmnode.cli.headline import headline_view
    from swarmnode.cli.render import status_view

    if as_json:
        typer.echo(json.dumps(_fetch_or_exit(home, url, "/status"), indent=2))
        return
    if addrs:
        doc = _fetch_or_exit(home, url, "/status")
        if not doc.get("multiaddrs"):
            if (doc.get("network") or {}).get("reachability") == "private":
                fail("peers cannot dial this node (behind NAT or a firewall): it has no address to join through; "
                     "forward its TCP port and set network.announce_maddrs, or give out another node's address", FAILED)
            fail(f"the daemon has no multiaddrs yet (state {doc.get('state')}); try again in a few seconds", FAILED)
        for maddr in doc["multiaddrs"]:
            typer.echo(maddr)
        return
    console = Console()
    if watch:
        _watch(console, home, url, full)
        return
    doc = _fetch_or_exit(home, url, "/status")
    # crop=False: an address longer than the terminal is left to the terminal's own wrap, copyable whole
    console.print(status_view(doc) if full else headline_view(doc, width=console.width), crop=False)


def _watch(console: Console, home: Optional[Path], url: Optional[str], full: bool) -> None:
    """Redraw the status every second in place, sized to the terminal; while the daemon does not
    answer, say so on screen and keep asking (Ctrl-C quits)."""
    from swarmnode.cli.headline import WatchState, watch_frame
    from swarmnode.status.client import NoDaemon, fetch, status_url_for_home

    state = WatchState()
    state.answered(_fetch_or_exit(home, url, "/status"))  # no daemon at all: one line, exit 1
    try:
        with Live(console=console, auto_refresh=False, vertical_overflow="crop") as live:
            while True:
                height, width = console.size.height - 1, console.width  # the last row holds the cursor
                live.update(watch_frame(state, height, width, full), refresh=True)
                time.sleep(1.0)
                try:
                    state.answered(fetch(url or status_url_for_home(NodeHome(resolve_home(home))), "/status", timeout=2.0))
                except NoDaemon as e:
                    state.failed(str(e), time.time())
    except KeyboardInterrupt:
        pass


@app.command(cls=HelpCommand)
def peers(
    home: Optional[Path] = HomeOption,
    url: Optional[str] = typer.Option(None, "--url", metavar="URL", help="status endpoint"),
    as_json: bool = typer.Option(False, "--json", help="print the peer list as JSON"),
) -> None:
    """List the daemon's peer table."""
    doc = _fetch_or_exit(home, url, "/peers")
    if as_json:
        typer.echo(json.dumps(doc, indent=2))
    elif not doc["peers"]:
        typer.echo("no peers yet: the node has not learnt of any (`swarmnode status` says how its join goes)")
    else:
        Console().print(peers_table(doc["peers"]))


@app.command(cls=HelpCommand)
def logs(
    home: Optional[Path] = HomeOption,
    follow: bool = typer.Option(False, "-f", "--follow", help="print new lines as they come, across rotation (Ctrl-C quits)"),
    lines: int = typer.Option(20, "-n", "--lines", min=0, metavar="N", help="how many of the last lines to print"),
) -> None:
    """Show the node's log, <home>/logs/node.log (-f follows it)."""
    from swarmnode.cli.logfile import follow as follow_log
    from swarmnode.cli.logfile import last_lines

    node_home = NodeHome(resolve_home(home))
    path = node_home.node_log
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        fail(f"no log at {path}: no node has run with home {node_home.root} yet "
             f"(start one with: swarmnode run --home {node_home.root})", FAILED)
    except OSError as e:
        fail(f"cannot read the log {path}: {e.strerror or e}", FAILED)
    with f:
        sys.stdout.write(last_lines(f, lines).decode("utf-8", errors="replace"))
        sys.stdout.flush()
        if follow:
            try:
                follow_log(f, path, lambda text: (sys.stdout.write(text), sys.stdout.flush()))
            except KeyboardInterrupt:
                pass


@swarm_app.command("local", cls=HelpCommand)
def swarm_local(
    nodes: int = typer.Option(3, "--nodes", min=1, max=32, help="number of node processes"),
    root: Path = typer.Option(Path("runs/local-swarm"), "--root", metavar="DIR", help="folder for the nodes' homes and logs"),
    config: Optional[Path] = typer.Option(
        None, "--config", metavar="FILE", help="config for every node (default: configs/local.yaml)"),
    duration: Optional[float] = typer.Option(None, "--duration", min=1, help="stop after this many seconds (default: until Ctrl-C)"),
    rounds: Optional[int] = typer.Option(None, "--rounds", min=1, help="each node trains this many steps, then all stop"),
    slowdowns: Optional[str] = typer.Option(
        None, "--slowdowns", metavar="X,Y,...", help="slowdowns; node i gets the (i mod count)-th, e.g. 1,2,4"),
    transport: Optional[Transport] = typer.Option(
        None, "--transport", help="every node's network.transport: hivemind (p2pd) or libp2p (pure Python)"),
    devices: Optional[str] = typer.Option(
        None, "--devices", metavar="D,E,...", help="model.device per node; node i gets the (i mod count)-th, "
                                                  "e.g. cuda,cpu: a GPU node beside CPU nodes"),
) -> None:
    """Start N daemons on 127.0.0.1 with a live table (Ctrl-C stops all).

    The first node is the bootstrap the others join through. Each node draws its own training questions (data_seed + 1000 * node index). At the end the
    last status of every node goes to <root>/summary.json; each home keeps metrics.sqlite and
    rollouts.sqlite.
    """
    from swarmnode.config import bundled_config_path
    from swarmnode.node.local_swarm import LocalSwarm, LocalSwarmError

    cfg_path = config if config is not None else bundled_config_path("local.yaml")
    try:
        node_config = load_config(cfg_path, environ={})
    except ConfigError as e:
        fail(str(e))
    factors = _parse_slowdowns(slowdowns) if slowdowns is not None else None
    node_devices = _parse_devices(devices) if devices is not None else None
    if rounds is not None and not node_config.model.name_or_path:
        fail(f"--rounds needs a config that trains a model; {cfg_path} sets no model.name_or_path "
             "(try --config with model.name_or_path: bundled:tiny-policy, e.g. the bundled local-train.yaml)")

    def node_env(index: int) -> dict[str, str]:
        env = {"SWARMNODE__TRAINING__DATA_SEED": str(node_config.training.data_seed + 1000 * index)}
        if rounds is not None:
            env["SWARMNODE__TRAINING__MAX_STEPS"] = str(rounds)
        if transport is not None:
            env["SWARMNODE__NETWORK__TRANSPORT"] = transport.value
        if node_devices is not None:
            env["SWARMNODE__MODEL__DEVICE"] = node_devices[index % len(node_devices)]
        return env

    def node_args(index: int) -> list[str]:
        return [] if factors is None else ["--slowdown", repr(factors[index % len(factors)])]

    swarm = LocalSwarm(root.resolve(), nodes, cfg_path, node_env=node_env, node_args=node_args)
    from swarmnode.cli.render import swarm_table

    console = Console()
    rows: list = []
    try:
        with swarm:
            swarm.start(on_progress=lambda msg: console.print(f"[dim]{msg}[/dim]"))
            deadline = None if duration is None else time.monotonic() + duration
            stop_at = [f"until every node has trained {rounds} steps"] if rounds else []
            stop_at += [f"for at most {duration:g} s"] if duration is not None else []
            until = " or ".join(stop_at) or "until Ctrl-C"
            caption = f"homes and logs in {root}; runs {until}; Ctrl-C stops every node"
            rows = swarm.poll()
            try:
                with Live(swarm_table(rows, caption), console=console, refresh_per_second=2) as live:
                    while deadline is None or time.monotonic() < deadline:
                        time.sleep(1.0)
                        rows = swarm.poll()
                        live.update(swarm_table(rows, caption))
                        if rounds is not None and swarm.training_done(rows):
                            break
            finally:
                if not console.is_terminal:
                    console.line()  # rich ends the table's last line only on a terminal
    except LocalSwarmError as e:
        fail(str(e), FAILED)
    except KeyboardInterrupt:
        pass
    (root / "summary.json").write_text(json.dumps(rows, indent=2, default=str), encoding="utf-8")
    console.print(f"stopped {nodes} nodes; homes, logs and summary.json in {root}")


def _slowdown_problem(value: float) -> str | None:
    """Why `value` is no valid training.slowdown (the config model's own check), or None."""
    from pydantic import ValidationError

    from swarmnode.config.model import TrainingConfig

    try:
        TrainingConfig(slowdown=value)
    except ValidationError as e:
        return f"{value:g} is not a valid training.slowdown: {e.errors()[0]['msg']}"
    return None


def _parse_slowdowns(text: str) -> list[float]:
    """--slowdowns "1,2,4" as floats, each checked as training.slowdown is, before any node starts."""
    try:
        factors = [float(part) for part in text.split(",")]
    except ValueError:
        fail(f"--slowdowns {text}: expected comma-separated numbers >= 1, e.g. 1,2,4")
    for factor in factors:
        if problem := _slowdown_problem(factor):
            fail(f"--slowdowns {text}: {problem}")
    return factors


def _parse_devices(text: str) -> list[str]:
    """--devices "cuda,cpu": each one checked on this machine (as --device is) before any node starts."""
    from swarmnode.node.preflight import device_problem

    names = [part.strip() for part in text.split(",")]
    for name in names:
        if problem := device_problem(name):
            fail(f"--devices {text}: {name!r}: {problem}")
    return names


@bench_app.command("async", cls=HelpCommand)
def bench_async_command(
    model: str = typer.Option("bundled:tiny-policy", "--model", help="hub id, local path or bundled:<name>"),
    steps: int = typer.Option(30, "--steps", min=1, help="training steps timed each way"),
    prompts: int = typer.Option(32, "--prompts", min=1, help="prompts per step"),
    samples: int = typer.Option(8, "--samples", min=1, help="samples per prompt"),
    max_staleness: int = typer.Option(1, "--max-staleness", min=1, help="async staleness bound (eta)"),
    cores: int = typer.Option(os.cpu_count() or 2, "--cores", min=1, help="CPU threads to use"),
    repeats: int = typer.Option(3, "--repeats", min=1, help="repeat every run, interleaved, and report medians"),
    device: str = typer.Option("cpu", "--device", help="cpu, cuda, cuda:0, ..."),
    dtype: str = typer.Option("float32", "--dtype", help="float32, bfloat16 or float16"),
    model_shape: str | None = typer.Option(None, "--model-shape", help="a randomly initialised model of this shape "
                                           "instead of --model (0.5b: Qwen2.5-0.5B's)"),
    decode: str = typer.Option("auto", "--decode", help="the generator's decode path (model.decode)"),
    max_new_tokens: int = typer.Option(8, "--max-new-tokens", min=1, help="tokens sampled per completion at most"),
    as_json: bool = typer.Option(False, "--json", help="last line: one JSON object with the figures"),
) -> None:
    """Compare synchronous and asynchronous training speed.

    Trains the same number of samples both ways; prints samples/s and the ratio, the
    generator's tokens/s alone and beside the trainer, and each side's idle share.
    """
    import functools

    from swarmnode.policy import PolicyLoadError, SamplingParams, load_policy
    from swarmnode.trainer.bench import bench_async, shaped_policy
    from swarmnode.trainer.loop import RolloutConfig

    if problem := _bench_flag_problem(device, dtype, model_shape, decode):
        fail(problem)
    load = None
    try:
        if model_shape is not None:
            load = functools.partial(shaped_policy, model_shape, device, dtype)  # the generator process builds the same
            policy = load()
        else:
            policy = load_policy(model, device=device, dtype=dtype)
    except PolicyLoadError as e:
        fail(str(e))
    config = RolloutConfig(prompts_per_step=prompts, samples_per_prompt=samples, max_staleness=max_staleness,
                           sampling=SamplingParams(temperature=1.0, max_new_tokens=max_new_tokens))
    console = Console(stderr=as_json)
    result = bench_async(policy, config, steps, cores, progress=lambda m: console.print(f"[dim]{m}[/dim]"), repeats=repeats,
                         decode=decode, load=load)
    _print_async_result(console, result)
    if as_json:
        typer.echo(json.dumps(result.as_dict()))


def _bench_flag_problem(device: str, dtype: str, model_shape: str | None, decode: str) -> str | None:
    """The first bad flag of `bench async`, as one line, or None."""
    from swarmnode.node.preflight import device_problem
    from swarmnode.policy.hf_backend import DECODES
    from swarmnode.trainer.bench import MODEL_SHAPES

    torch_dtypes = ("float32", "bfloat16", "float16")
    if dtype not in torch_dtypes:
        return f"--dtype {dtype}: expected one of {', '.join(torch_dtypes)}"
    if decode not in DECODES:
        return f"--decode {decode}: expected one of {', '.join(DECODES)}"
    if model_shape is not None and model_shape not in MODEL_SHAPES:
        return f"--model-shape {model_shape}: expected one of {', '.join(MODEL_SHAPES)}"
    if problem := device_problem(device):
        return f"--device {device}: {problem}"
    return None


def _print_async_result(console: Console, result) -> None:
    """`bench async`'s figures for people: both rates, their ratio, the generator's speeds, idle shares."""
    def tried(seconds_by: dict) -> str:
        return ", ".join(f"{key} {seconds:.1f}s" for key, seconds in seconds_by.items())

    console.print(f"sync : {result.sync_samples_per_s:8.1f} samples/s ({result.samples} samples in "
                  f"{result.sync_seconds:.1f}s, {result.sync_threads} threads)")
    console.print(f"       threads tried: {tried(result.sync_seconds_by_threads)}")
    console.print(f"async: {result.async_samples_per_s:8.1f} samples/s ({result.samples} samples in "
                  f"{result.async_seconds:.1f}s, generator as a {result.async_mode})")
    console.print(f"       generator tried as a {tried(result.async_seconds_by_mode)}; "
                  f"it waited {result.generator_wait_s:.1f}s")
    repeats = result.repeats
    per_repeat = f" (per repeat: {', '.join(f'{r:.2f}x' for r in result.ratio_by_repeat)})" if repeats > 1 else ""
    console.print(f"async/sync ratio: {result.ratio:.2f}x{per_repeat}" + (" (medians)" if repeats > 1 else ""))
    rate = lambda x: "-" if x is None else f"{x:,.0f}"  # noqa: E731
    share = lambda x: "-" if x is None else f"{x:.0%}"  # noqa: E731
    console.print(f"generator: {rate(result.generator_tokens_per_s_alone)} tokens/s alone, "
                  f"{rate(result.generator_tokens_per_s_beside)} beside the trainer"
                  + (f" ({result.generator_beside_over_alone:.2f}x)" if result.generator_beside_over_alone else ""))
    console.print(f"idle (async): generator {share(result.generator_idle_share)}, trainer {share(result.trainer_idle_share)}"
                  f" ({result.device}, {result.dtype}, decode {result.decode})")


def main(argv: list[str] | None = None) -> int:
    """Entry point: turns flag errors into one line instead of a usage panel."""
    try:
        result = app(args=argv, standalone_mode=False)
    except typer.Exit as e:
        return int(e.exit_code or 0)
    except typer.Abort:
        typer.echo("aborted", err=True)
        return 130
    except Exception as e:  # noqa: BLE001
        # typer's (vendored) click usage errors carry format_message() and exit_code.
        if hasattr(e, "format_message") and hasattr(e, "exit_code"):
            command = " ".join(["swarmnode", *[a for a in (argv if argv is not None else sys.argv[1:]) if not a.startswith("-")][:1]])
            # typer checks an enum flag through pydantic, whose prefix says nothing to a user
            message = e.format_message().replace(": Value error, ", ": ")
            typer.echo(f"error: {message} (see: {command} --help)", err=True)
            return int(e.exit_code)
        raise
    return int(result) if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
