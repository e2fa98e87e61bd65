"""swarm/transports/hivemind/imports.py: with hivemind's packages made lazy, the transport's hivemind
imports load no torch, every name a package exports is still there (imported on first use), and
nothing changes once hivemind is imported. Each check runs in a fresh interpreter: sys.modules
is the thing under test."""
import subprocess
import sys
import textwrap

from swarmnode.swarm.transports.hivemind.imports import package_exports


def run_python(code: str) -> str:
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_the_transport_imports_hivemind_without_torch():
    out = run_python("""
        import sys
        from swarmnode.swarm.transports.hivemind.imports import defer_hivemind_imports
        assert defer_hivemind_imports()
        from hivemind.dht.node import DHTNode
        from hivemind.p2p import P2P, PeerID
        from hivemind.p2p.p2p_daemon_bindings.utils import P2PDaemonError
        from hivemind.utils import get_dht_time
        from hivemind.utils.logging import use_hivemind_log_handler
        from hivemind.utils.multiaddr import Multiaddr
        import swarmnode.swarm.transports.hivemind.transport, swarmnode.swarm.transports.hivemind.validator
        print("torch" in sys.modules)
    """)
    assert out == "False"


def test_every_export_is_there_on_first_use_and_torch_only_with_what_needs_it():
    out = run_python("""
        import sys
        from swarmnode.swarm.transports.hivemind.imports import defer_hivemind_imports
        defer_hivemind_imports()
        import hivemind
        from hivemind.utils import MSGPackSerializer
        before = "torch" in sys.modules
        from hivemind import DHT
        from hivemind.dht import DHT as SameDHT
        print(hivemind.__version__, before, DHT is SameDHT, DHT.__module__, "torch" in sys.modules)
    """)
    version, before, same, module, after = out.split()
    assert version.count(".") == 2 and (before, same, module, after) == ("False", "True", "hivemind.dht.dht", "True")


def test_nothing_changes_once_hivemind_is_imported():
    out = run_python("""
        import hivemind.p2p
        from swarmnode.swarm.transports.hivemind.imports import defer_hivemind_imports
        print(defer_hivemind_imports(), hasattr(hivemind, "DecentralizedAverager"))
    """)
    assert out == "False True"


def test_package_exports_are_read_from_the_init_source():
    source = textwrap.dedent("""
        \"\"\"doc\"\"\"
        from pkg.a import One, Two as Deux
        from .b import Three
        from . import sub
        import pkg.c as c
        import os
        __version__ = "1.2.3"
    """)
    exports, constants = package_exports(source, "pkg")
    assert exports == {"One": ("pkg.a", "One"), "Deux": ("pkg.a", "Two"), "Three": ("pkg.b", "Three"),
                       "sub": ("pkg", "sub"), "c": ("pkg.c", None)}
    assert constants == {"__version__": "1.2.3"}
