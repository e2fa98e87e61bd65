"""The Linux commands an emulated internet is made of: namespaces, veth pairs, a bridge, NAT rules.

Each function runs one `ip`, `iptables` or `tc` command and raises `NetworkCommandFailed` with
the command and its stderr when it fails. Nothing here knows the topology (topology.py does).

Every namespace this package makes is named `swn<pid>-<host>`, the pid being the process that
built it: `remove_leftovers` deletes those whose builder is dead (a SIGKILLed test run), so a
killed run never leaves namespaces behind for long.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import psutil

PREFIX = "swn"
_NAME = re.compile(rf"^{PREFIX}(\d+)-[a-z0-9]+$")
NETNS_ETC = Path("/etc/netns")  # `ip netns exec` bind-mounts /etc/netns/<ns>/hosts on /etc/hosts


class NetworkCommandFailed(RuntimeError):
    """An ip / iptables / tc command failed."""


def run(*args: str, netns: str | None = None) -> str:
    """Run one command (inside `netns` when given); return its stdout or raise with its stderr."""
    command = (["ip", "netns", "exec", netns] if netns else []) + list(args)
    done = subprocess.run(command, capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise NetworkCommandFailed(f"`{' '.join(command)}` failed: {done.stderr.strip() or done.returncode}")
    return done.stdout


def why_unavailable() -> str | None:
    """None where an emulated internet can be built here; otherwise the one reason it cannot."""
    if os.geteuid() != 0:
        return "the emulated internet needs root (network namespaces, iptables)"
    for tool in ("ip", "iptables", "tc"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed (./scripts/test.sh installs iptables as root where apt-get exists)"
    probe = f"{PREFIX}{os.getpid()}-probe"
    try:
        run("ip", "netns", "add", probe)
    except NetworkCommandFailed as e:
        return f"network namespaces are not available here: {e}"
    try:
        run("iptables", "-t", "nat", "-L", "-n", netns=probe)
    except NetworkCommandFailed as e:
        return f"iptables NAT does not work in a network namespace here: {e}"
    finally:
        delete_namespace(probe)
    return None


def namespace_name(host: str, owner_pid: int | None = None) -> str:
    return f"{PREFIX}{owner_pid or os.getpid()}-{host}"


def list_namespaces() -> list[str]:
    return [line.split()[0] for line in run("ip", "netns", "list").splitlines() if line.strip()]


def remove_leftovers() -> list[str]:
    """Delete the namespaces (and their hosts files) of emulated internets whose builder is dead."""
    removed = []
    for name in list_namespaces():
        match = _NAME.match(name)
        if match and not psutil.pid_exists(int(match.group(1))):
            delete_namespace(name)
            removed.append(name)
    for folder in NETNS_ETC.glob(f"{PREFIX}*-*") if NETNS_ETC.exists() else []:
        match = _NAME.match(folder.name)
        if match and not psutil.pid_exists(int(match.group(1))):
            shutil.rmtree(folder, ignore_errors=True)
    return removed


def processes_in(netns: str) -> list[int]:
    """Pids of the processes running inside `netns`."""
    try:
        return [int(pid) for pid in run("ip", "netns", "pids", netns).split()]
    except NetworkCommandFailed:
        return []


def delete_namespace(netns: str) -> None:
    """Kill whatever runs in `netns`, then delete it (its veths go with it). Never raises."""
    for pid in processes_in(netns):
        try:
            os.kill(pid, 9)
        except (ProcessLookupError, PermissionError):
            pass
    subprocess.run(["ip", "netns", "delete", netns], capture_output=True, timeout=30)
    shutil.rmtree(NETNS_ETC / netns, ignore_errors=True)


def add_namespace(netns: str) -> None:
    """A namespace with loopback up and its own /etc/hosts (see `write_hosts`)."""
    run("ip", "netns", "add", netns)
    run("ip", "link", "set", "lo", "up", netns=netns)
    write_hosts(netns, {})


def write_hosts(netns: str, names: dict[str, str]) -> None:
    """The namespace's /etc/hosts (name -> address), for /dns4 addresses; read at each exec."""
    folder = NETNS_ETC / netns
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["127.0.0.1 localhost"] + [f"{address} {name}" for name, address in sorted(names.items())]
    (folder / "hosts").write_text("\n".join(lines) + "\n")


def add_bridge(netns: str, bridge: str) -> None:
    run("ip", "link", "add", bridge, "type", "bridge", netns=netns)
    run("ip", "link", "set", bridge, "up", netns=netns)


def add_veth(a_ns: str, a_dev: str, b_ns: str, b_dev: str) -> None:
    """A veth pair with one end in each namespace, both up."""
    run("ip", "link", "add", a_dev, "netns", a_ns, "type", "veth", "peer", "name", b_dev, "netns", b_ns)
    run("ip", "link", "set", a_dev, "up", netns=a_ns)
    run("ip", "link", "set", b_dev, "up", netns=b_ns)


def attach_to_bridge(netns: str, dev: str, bridge: str) -> None:
    run("ip", "link", "set", dev, "master", bridge, netns=netns)


def add_address(netns: str, dev: str, cidr: str) -> None:
    run("ip", "addr", "add", cidr, "dev", dev, netns=netns)


def add_default_route(netns: str, via: str) -> None:
    run("ip", "route", "add", "default", "via", via, netns=netns)


def make_nat_router(netns: str, wan: str, lan: str, random_ports: bool = False) -> None:
    """Forward LAN -> WAN with source NAT (masquerade); from the WAN only replies come in.
    The router keeps a connection's source port where it can, as most home routers do (what
    hole punching relies on); `random_ports` gives every connection a random one instead, as
    some routers and carrier-grade NATs do."""
    run("sysctl", "-q", "-w", "net.ipv4.ip_forward=1", netns=netns)
    masquerade = ["-j", "MASQUERADE", "--random-fully"] if random_ports else ["-j", "MASQUERADE"]
    run("iptables", "-t", "nat", "-A", "POSTROUTING", "-o", wan, *masquerade, netns=netns)
    run("iptables", "-P", "FORWARD", "DROP", netns=netns)
    run("iptables", "-A", "FORWARD", "-i", lan, "-o", wan, "-j", "ACCEPT", netns=netns)
    run("iptables", "-A", "FORWARD", "-i", wan, "-o", lan, "-m", "conntrack", "--ctstate",
        "ESTABLISHED,RELATED", "-j", "ACCEPT", netns=netns)
    # The router itself answers nothing from the WAN either (no "connection refused": silence).
    run("iptables", "-A", "INPUT", "-i", wan, "-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED",
        "-j", "ACCEPT", netns=netns)
    run("iptables", "-A", "INPUT", "-i", wan, "-j", "DROP", netns=netns)


def limit_rate(netns: str, dev: str, mbit: float) -> None:
    """Cap what `dev` sends at `mbit` Mbit/s (token bucket; this kernel has no netem)."""
    burst = max(16_000, int(mbit * 1e6 / 8 / 100))  # at least 10 ms worth of bytes
    run("tc", "qdisc", "replace", "dev", dev, "root", "tbf", "rate", f"{mbit}mbit", "burst", str(burst),
        "latency", "200ms", netns=netns)


def set_link(netns: str, dev: str, up: bool) -> None:
    run("ip", "link", "set", dev, "up" if up else "down", netns=netns)
