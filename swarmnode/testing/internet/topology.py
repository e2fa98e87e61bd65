"""An emulated internet in network namespaces: public hosts, and homes behind NAT routers.

    internet = Internet()                  # a core namespace with one bridge: "the internet"
    boot = internet.add_public_host("boot")            # 198.18.0.10, named boot.swarm.test
    alice, = internet.add_home("alice").hosts          # 198.18.1.10 behind a router at 198.18.0.101
    proc = internet.popen(alice, ["python", "-m", "swarmnode", "run", ...])
    internet.cut(alice.home); internet.heal(alice.home)  # a partition, and its end
    internet.close()                                   # kills what runs inside, deletes it all

Addresses: the internet is 198.18.0.0/24 (public hosts from .10, home routers from .101); home
k's LAN is 198.18.k.0/24 (router .1, hosts from .10). Nothing has a route out of 198.18.0.0/15
and no namespace is linked to the machine's own network, so no packet leaves. A home router
masquerades its LAN and lets in only replies (the common home NAT), keeping source ports where
it can; `random_ports` makes it pick a random source port per connection instead (as some
routers and carrier-grade NATs do), which defeats hole punching. `uplink_mbit` caps a home's
link both ways with a token bucket. Every public host name resolves (/etc/hosts in each
namespace) as `<name>.swarm.test`, for /dns4 addresses.
"""
from __future__ import annotations

import atexit
import subprocess
from dataclasses import dataclass, field
from typing import Any

from swarmnode.testing.internet import namespaces as ns

DOMAIN = "swarm.test"
INTERNET_PREFIX = "198.18.0"


@dataclass
class Home:
    name: str
    index: int
    router_ns: str
    wan_address: str  # what the internet sees: every host of the home, masqueraded
    core_dev: str  # the home's cable, on the internet's side
    hosts: list["Host"] = field(default_factory=list)
    connected: bool = True


@dataclass
class Host:
    name: str
    netns: str
    address: str  # the host's own address: public for a public host, a LAN address in a home
    home: Home | None = None

    @property
    def public(self) -> bool:
        return self.home is None

    @property
    def dns_name(self) -> str:
        return f"{self.name}.{DOMAIN}"


class Internet:
    """Builds itself on first use; `close()` (or leaving a `with` block, or exit) tears it down."""

    def __init__(self) -> None:
        ns.remove_leftovers()
        self.core_ns = ns.namespace_name("core")
        self.public_hosts: list[Host] = []
        self.homes: list[Home] = []
        self._namespaces: list[str] = []
        self._processes: list[subprocess.Popen] = []
        self._closed = False
        atexit.register(self.close)
        try:
            self._add_namespace(self.core_ns)
            ns.add_bridge(self.core_ns, "inet")
        except BaseException:
            self.close()
            raise

    # -- building --------------------------------------------------------------------------

    def _add_namespace(self, name: str) -> None:
        self._namespaces.append(name)
        ns.add_namespace(name)
        self._write_hosts_files()

    def _names(self) -> dict[str, str]:
        return {host.dns_name: host.address for host in self.public_hosts}

    def _write_hosts_files(self) -> None:
        # Every namespace resolves every public host, including those added after it was made.
        names = self._names()
        for name in self._namespaces:
            ns.write_hosts(name, names)

    def add_public_host(self, name: str, uplink_mbit: float | None = None) -> Host:
        """A host with an address on the internet that anyone can dial."""
        index = len(self.public_hosts)
        host = Host(name, ns.namespace_name(name), f"{INTERNET_PREFIX}.{10 + index}")
        self._add_namespace(host.netns)
        ns.add_veth(self.core_ns, f"p{index}", host.netns, "eth0")
        ns.attach_to_bridge(self.core_ns, f"p{index}", "inet")
        ns.add_address(host.netns, "eth0", f"{host.address}/24")
        if uplink_mbit:
            ns.limit_rate(host.netns, "eth0", uplink_mbit)
            ns.limit_rate(self.core_ns, f"p{index}", uplink_mbit)
        self.public_hosts.append(host)
        self._write_hosts_files()
        return host

    def add_home(self, name: str, hosts: int = 1, uplink_mbit: float | None = None,
                 random_ports: bool = False) -> Home:
        """A home network: `hosts` machines behind one masquerading router that drops inbound.
        The router keeps source ports where it can (hole punching works through it);
        `random_ports` makes it pick a random one per connection (no punch gets through)."""
        index = len(self.homes) + 1
        if index > 200:
            raise ValueError("at most 200 homes fit the address plan")
        home = Home(name, index, ns.namespace_name(f"{name}r"), f"{INTERNET_PREFIX}.{100 + index}", f"r{index}")
        self._add_namespace(home.router_ns)
        ns.add_veth(self.core_ns, home.core_dev, home.router_ns, "wan")
        ns.attach_to_bridge(self.core_ns, home.core_dev, "inet")
        ns.add_address(home.router_ns, "wan", f"{home.wan_address}/24")
        ns.add_bridge(home.router_ns, "lan")
        ns.add_address(home.router_ns, "lan", f"198.18.{index}.1/24")
        ns.make_nat_router(home.router_ns, wan="wan", lan="lan", random_ports=random_ports)
        if uplink_mbit:
            ns.limit_rate(home.router_ns, "wan", uplink_mbit)
            ns.limit_rate(self.core_ns, home.core_dev, uplink_mbit)
        for j in range(hosts):
            host_name = name if hosts == 1 else f"{name}{j}"
            host = Host(host_name, ns.namespace_name(host_name), f"198.18.{index}.{10 + j}", home)
            self._add_namespace(host.netns)
            ns.add_veth(home.router_ns, f"h{j}", host.netns, "eth0")
            ns.attach_to_bridge(home.router_ns, f"h{j}", "lan")
            ns.add_address(host.netns, "eth0", f"{host.address}/24")
            ns.add_default_route(host.netns, f"198.18.{index}.1")
            home.hosts.append(host)
        self.homes.append(home)
        return home

    # -- partitions ------------------------------------------------------------------------

    def cut(self, home: Home) -> None:
        """Unplug the home's cable: nothing goes in or out until `heal`."""
        ns.set_link(self.core_ns, home.core_dev, up=False)
        home.connected = False

    def heal(self, home: Home) -> None:
        ns.set_link(self.core_ns, home.core_dev, up=True)
        home.connected = True

    # -- processes -------------------------------------------------------------------------

    def command(self, host: Host, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", host.netns, *argv]

    def popen(self, host: Host, argv: list[str], **kwargs: Any) -> subprocess.Popen:
        """Start `argv` on `host`; it is killed at `close()` if still running."""
        proc = subprocess.Popen(self.command(host, argv), **kwargs)
        self._processes.append(proc)
        return proc

    def run(self, host: Host, argv: list[str], timeout: float = 60, **kwargs: Any) -> subprocess.CompletedProcess:
        return subprocess.run(self.command(host, argv), capture_output=True, text=True, timeout=timeout, **kwargs)

    # -- teardown --------------------------------------------------------------------------

    def close(self) -> None:
        """Kill every process started here, delete every namespace. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        for proc in self._processes:
            if proc.poll() is None:
                proc.kill()
        for proc in self._processes:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        for name in reversed(self._namespaces):
            ns.delete_namespace(name)
        atexit.unregister(self.close)

    def __enter__(self) -> "Internet":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
