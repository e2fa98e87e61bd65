"""swarmnode: a node for decentralized peer-to-peer RL post-training of language models.

Subpackages, lowest layer first (each imports only from those above it in this list):

- assets/: the bundled tiny policies (data; imports nothing)
- utils/: generic helpers with no swarmnode imports (bounded maps, rate limits, backoff)
- identity/: the node's Ed25519 signing key and libp2p identity, and the binding between them
- config/: NodeConfig (the pydantic model of the YAML config) and its loader
- home.py: the node home (key files, config, the runtime file the CLI reads), DaemonLock
- tasks/: task sources and verifiers; every item is regenerable from (task, seed, index)
- policy/: loading a model and tokenizer, prompts, and the generation backends (hf, vllm)
- protocol/: the signed, versioned wire messages (schemas in protocols/) and their checks
- swarm/: transports, relaying, the peer table and the per-peer bookkeeping of gossip (no models)
- trainer/: the RL trainer: advantages, objectives, the experience buffer, train steps
- summaries/: gradient summaries: compression, checks, trust and the robust outer step
- scheduler/: measured speeds and the per-window plan of how much to generate, train and take
- store/: durable state in the home: checkpoints, received rollouts, metrics, standings
- status/: the status document, its HTTP endpoint and Prometheus view, and a client
- node/: the daemon: its loops move bytes between the swarm, the trainer and the stores
- cli/: the `swarmnode` command (__main__.py runs it)

Outside the layers: testing/, test and experiment support shipped with the package, may import
any of them; nothing in the node imports it.
"""

__version__ = "0.1.0"
