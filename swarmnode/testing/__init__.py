"""Test support that ships with the package, for the test suite and the experiment scripts alike.

Nothing in the node imports it at run time. scripts/ and tests/ both import from here (scripts/
never import from tests/).

- `hostile/`: adversarial peers that speak the real protocol, for tests/integration and
  scripts/experiments (see its own map).
- `other_version.py`: the real node speaking other wire-protocol versions (SWARMNODE_TEST_PROTOCOL),
  for a swarm of two versions in tests/integration.
- `bootstrap_node.py`: `BootstrapNode`, a real `swarmnode bootstrap` process on 127.0.0.1 that
  nodes join through by its /dns4/localhost address, for tests/integration and scripts/bench.
- `experiments/`: what the experiment and bench scripts share (local runs, figures, process
  samples, the SAPO and heterogeneity results), for scripts/ and tests/unit/scripts.
- `code_sizes.py`: the lines of each module and function, and those over the style limits, for
  scripts/dev/code_sizes.py and tests/unit/test_code_sizes.py.
- `internet/`: an emulated internet in network namespaces (public hosts, homes behind NAT
  routers) with real daemons on its hosts, for tests/integration and scripts/experiments.
"""
