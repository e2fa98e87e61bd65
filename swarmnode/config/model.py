"""The node's configuration: one pydantic model, loaded from YAML (see configs/default.yaml)."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class _Section(BaseModel):
    # Unknown fields are errors: a typo in a YAML key must not be silently ignored.
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def _check_maddr(value: str) -> str:
    if not value.startswith("/") or len(value.split("/")) < 3:
        raise ValueError(f"{value!r} is not a multiaddr (expected e.g. /ip4/127.0.0.1/tcp/31337)")
    return value


class SwarmConfig(_Section):
    name: str = Field("swarmnode-public", min_length=1, max_length=64, description="swarm to join")
    window_s: float = Field(30.0, gt=0, le=86_400, description="length of a swarm time window, seconds")
    initial_peers: list[str] = Field(default_factory=list, description="multiaddrs (with /p2p/<peer id>) to join through")

    @field_validator("initial_peers")
    @classmethod
    def _peers_are_maddrs(cls, value: list[str]) -> list[str]:
        for item in value:
            _check_maddr(item)
            if "/p2p/" not in item or not item.rsplit("/p2p/", 1)[1].strip("/"):
                raise ValueError(f"{item!r} has no /p2p/<peer id> part (copy the full address the peer prints)")
        return value


class NetworkConfig(_Section):
    transport: Literal["hivemind", "libp2p"] = Field(
        "hivemind", description="hivemind: its DHT over the p2pd daemon it ships; libp2p: py-libp2p, pure Python. "
                                "Every node of one swarm uses the same one (docs/transports.md)")
    libp2p_host: Literal["thread", "process"] = Field(
        "process", description="where the libp2p transport's host runs: a child process of its own, out of reach "
                               "of the trainer's GIL, or a thread of the node's process (one process less: for "
                               "model-less nodes) (docs/transports.md)")
    host_maddrs: list[str] = Field(default_factory=lambda: ["/ip4/0.0.0.0/tcp/0"])
    announce_maddrs: list[str] = Field(default_factory=list)
    client_mode: bool = Field(False, description="for nodes that cannot accept inbound connections")
    p2pd_startup_timeout_s: float = Field(120.0, gt=0, description="how long the transport (p2pd, or libp2p's host) may take to start (a busy machine needs more than 15 s)")
    use_relay: bool = True
    auto_nat: bool = True
    join_backoff_initial_s: float = Field(1.0, gt=0)
    join_backoff_max_s: float = Field(60.0, gt=0)
    dht_wait_timeout_s: float = Field(3.0, gt=0, description="a DHT request is deemed lost after this long")
    reachability: Literal["auto", "public", "private"] = Field(
        "auto", description="auto: peers dial this node back to find out; public / private: say so and skip the check")
    reachability_check_interval_s: float = Field(300.0, gt=0, description="how often peers are asked to dial back")
    relays: int = Field(2, ge=0, le=4, description="relay reservations a node that cannot be dialled keeps on public peers")
    relay_service: bool = Field(True, description="relay requests for nodes behind NAT while this node is reachable")
    relay_capacity: int = Field(32, ge=0, le=4096, description="nodes this node relays for at once")
    relay_max_forwards: int = Field(128, ge=1, description="relayed requests in flight at once")

    @field_validator("host_maddrs", "announce_maddrs")
    @classmethod
    def _maddrs(cls, value: list[str]) -> list[str]:
        return [_check_maddr(v) for v in value]


class RecordConfig(_Section):
    publish_interval_s: float = Field(5.0, gt=0, description="how often the PeerRecord is republished")
    ttl_s: float = Field(20.0, gt=0, description="how long a PeerRecord stays valid after signing")
    poll_interval_s: float = Field(2.0, gt=0, description="how often peers' records are read")


class StatusConfig(_Section):
    host: str = Field("127.0.0.1", description="status HTTP endpoint address; keep it on loopback")
    port: int = Field(0, ge=0, le=65535, description="0 picks a free port (written to the home's runtime file)")
    prometheus: bool = True


class ModelConfig(_Section):
    name_or_path: str | None = Field(
        None, description="HF hub id, local path or bundled:tiny-policy; none: the node trains nothing"
    )
    device: str = Field("cpu", description="cpu, cuda, cuda:0, ...")
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    backend: Literal["hf", "vllm"] = Field("hf", description="generation backend (vllm: pip install swarmnode[vllm])")
    vllm_kv_cache_memory_bytes: int | None = Field(64 * 2**20, ge=1, description="vLLM KV cache size; null: sized from GPU memory")
    vllm_tensor_parallel_size: int = Field(1, ge=1, description="GPUs vLLM shards generation over")
    decode: Literal["auto", "loop", "bucketed", "generate", "static"] = Field(
        "auto", description="hf decode path: loop (rows leave as they end), bucketed (batch shrinks to powers of two), "
                            "generate (model.generate), static (model.generate with a static KV cache, compiled into "
                            "CUDA graphs on a GPU); auto: the one measured fastest on the device (policy/hf_backend.py)"
    )
    fp32_logits: bool = Field(
        False, description="bf16/fp16 models compute logits in float32 in the generator and the trainer "
                           "(measured no smaller log-prob gap on the models tried; costs a float32 matmul over the vocabulary)"
    )
    cudnn_attention: bool = Field(
        False, description="let attention use cuDNN's kernel on a GPU (it re-plans for every new shape: measured slower "
                           "for decoding and training, docs/training.md, 'GPU nodes')"
    )


class TrainingConfig(_Section):
    tasks: list[str] = Field(default_factory=lambda: ["sum2", "sum3"], min_length=1)
    local_rollouts: int = Field(32, ge=1, description="I: groups (prompts) generated and trained per step")
    external_rollouts: int = Field(0, ge=0, description="J: groups from peers added to each step (swarm sampling)")
    external_selection: Literal["uniform", "nonzero_advantage", "fresh_quality", "own_need", "balanced"] = Field(
        "uniform", description="which received groups a step takes (see trainer/selection.py)"
    )
    external_max_staleness: int = Field(8, ge=0, description="a peer's group of version v trains version n only if n - v <= this")
    foreign_text_objective: Literal["plain", "shaped"] = Field(
        "plain", description="another model's text: plain (re-scored as if sampled here) or shaped "
                             "(LUFFY's p / (p + gamma): at most a quarter of an own sample's weight per token)"
    )
    foreign_shaping_gamma: float = Field(0.1, gt=0, description="gamma of the shaped objective for another model's text")
    external_positive_only: bool = Field(False, description="train only on peers' samples with positive advantage")
    external_wait_s: float = Field(0.0, ge=0, description="how long a step waits until the pool holds J external groups it can draw (0: take what is there); only while peers are sending: no wait once no drawable group has arrived for max(8 s, 4 waits)")
    samples_per_prompt: int = Field(8, ge=2, description="GRPO group size")
    max_staleness: int = Field(1, ge=0, description="eta: a rollout of version v trains version n only if n - v <= eta")
    temperature: float = Field(1.0, gt=0)
    top_p: float = Field(1.0, gt=0, le=1)
    max_new_tokens: int = Field(8, ge=1)
    lr: float = Field(1e-4, gt=0)
    max_grad_norm: float = Field(1.0, gt=0)
    eps_low: float = Field(0.2, ge=0)
    eps_high: float = Field(0.28, ge=0)
    kl_coef: float = Field(0.0, ge=0)
    data_seed: int = Field(1000, ge=1, description="training items come from this seed (held-out: seed 0)")
    eval_every: int = Field(10, ge=1, description="held-out accuracy every this many versions")
    eval_every_s: float = Field(
        0.0, ge=0, allow_inf_nan=False,
        description="also evaluate after the first step at least this many seconds after the last evaluation "
                    "(0: versions only); equal wall-time resolution for nodes of different speeds")
    eval_size: int = Field(64, ge=1, description="held-out items per task")
    checkpoint_every: int = Field(10, ge=1, description="checkpoint every this many versions")
    threads: int = Field(0, ge=0, description="torch threads (0: all cores)")
    # Training takes every core it gets; the node's network work is small but waits on it. At a
    # lower priority the trainer yields a core to the event loop, p2pd or the libp2p host as
    # soon as they have work, and to the owner's other programs (docs/transports.md). Off by
    # default until the one CI failure seen with it at 10 is understood (transports.md).
    nice: int = Field(
        0, ge=0, le=19,
        description="nice value of the training and generation threads and of what they start (Linux); "
                    "0: the node's own priority",
    )
    generator: Literal["thread", "process"] = Field(
        "thread", description="run the hf generator as a thread, or as a child process with a core of its own "
                              "(no shared GIL; on a GPU its own CUDA context, weights handed over on the device; hf backend only)"
    )
    max_steps: int | None = Field(None, ge=1, description="stop training after this many steps (the node keeps serving)")
    keep_serving: bool = Field(
        False, description="when training fails after start, stay in the swarm serving peers without training "
                           "(status state `serving`) instead of stopping with exit code 1 (`swarmnode run --keep-serving`)"
    )
    micro_batch_tokens: int | Literal["auto"] = Field(
        "auto", description="padded positions per forward + backward (larger batches accumulate gradients over "
                            "micro-batches); auto: from the GPU's free memory, or 4 GiB of activations on a CPU"
    )
    forward_chunking: Literal["auto", "length", "single", "plain"] = Field(
        "auto", description="trainer forward: length-chunked shared prompts, one chunk, or plain padded rows; "
                            "auto: the one measured fastest on the device (trainer/forward.py)"
    )
    # One machine can hold a heterogeneous swarm: the pause is proportional to the work measured,
    # so a node at 3 delivers a third of what it could, whatever each batch costs.
    slowdown: float = Field(
        1.0, ge=1.0, le=1000.0, allow_inf_nan=False,
        description="make this node X times slower for real (`swarmnode run --slowdown X`): after each generated "
                    "batch and each train step it pauses (X - 1) times that work's measured time; 1: full speed"
    )

    @field_validator("micro_batch_tokens")
    @classmethod
    def _positive_micro_batch(cls, value: int | str) -> int | str:
        if isinstance(value, int) and value < 1:
            raise ValueError(f"training.micro_batch_tokens must be >= 1 or auto, got {value}")
        return value


class RolloutGossipConfig(_Section):
    share: bool = Field(True, description="publish this node's rollouts to the swarm")
    announce_interval_s: float = Field(2.0, gt=0, description="how often the rollout announcement is republished")
    announce_ttl_s: float = Field(20.0, gt=0, description="how long an announcement stays valid")
    fetch_interval_s: float = Field(1.0, gt=0, description="how often peers' announcements are read and new batches fetched")
    fetch_timeout_s: float = Field(5.0, gt=0, description="a batch fetch from one peer gives up after this long")
    # A fetch is a long-poll: a peer with nothing new answers when it has (or after this long),
    # so an idle peer costs one request per long_poll_s instead of one per fetch interval.
    long_poll_s: float = Field(
        5.0, ge=0, le=60, description="how long a fetch may wait at the peer for a new batch, and how long this node "
                                      "holds a peer's fetch (0: plain polling)"
    )
    max_held_requests: int = Field(
        64, ge=0, le=4096, description="peers' long-polls held at once (one per peer); more are answered at once"
    )
    discover_interval_s: float = Field(
        10.0, gt=0, description="how often the DHT is read for new peers' rollout announcements (known peers are "
                                "fetched from directly; their announcements are re-read only before they lapse)"
    )
    keep_batches: int = Field(64, ge=1, description="batches this node keeps for peers to fetch")
    backlog_batches: int = Field(4, ge=1, description="batches fetched from a newly seen peer")
    # Fetching everything checks and re-scores about 3 groups per group trained at a 4/4 split
    # (9 at 6/2); the rest only age out of the pool. With a bound, fetches pause while the pool
    # is full and then ask each peer for its newest batches, never a stale backlog.
    fetch_ahead_steps: float = Field(
        2.0, ge=0, le=64, description="fetch peers' batches only while the pool holds fewer usable groups than this "
                                      "many steps take (0: fetch everything; with the scheduler, a pool that held enough "
                                      "means peers supply what it asks)"
    )
    strike_limit: int = Field(20, ge=1, description="rejected groups from one peer within strike_window_s before it is ignored")
    strike_window_s: float = Field(60.0, gt=0)
    ignore_s: float = Field(120.0, gt=0, description="how long a peer that sent bad data is ignored")


class SummariesConfig(_Section):
    """Gradient summaries: compressed pseudo-gradients exchanged every `every_steps` local steps
    between nodes that started from the same weights, merged with an outer optimizer (NoLoCo style)."""

    enabled: bool = Field(
        True, description="publish and merge gradient summaries while a peer with the same base weights is in the swarm "
                          "(alone, a node trains as if off)"
    )
    every_steps: int = Field(20, ge=1, description="H: local training steps between outer steps")
    density: float = Field(0.02, gt=0, le=0.5, description="share of each chunk's entries sent (top-k)")
    bits: Literal[2, 4, 8] = Field(2, description="bits per sent value")
    chunk_size: int = Field(4096, ge=64, le=65536, description="entries per chunk; top-k and scales are per chunk")
    outer_lr: float = Field(1.0, gt=0, le=10, description="outer optimizer learning rate")
    outer_momentum: float = Field(0.5, ge=0, lt=1, description="outer optimizer momentum")
    nesterov: bool = Field(True, description="Nesterov momentum in the outer optimizer")
    partners_per_step: int = Field(
        2, ge=1, le=64, description="peers' summaries merged per outer step (pseudo-random among the freshest)"
    )
    staleness_exponent: float = Field(1.0, ge=0, description="a in the staleness weight (1 + tau)^-a")
    max_staleness: int = Field(
        4, ge=0, description="a summary older than this many of this node's own outer steps is dropped unmerged"
    )
    announce_interval_s: float = Field(2.0, gt=0, description="how often the summary announcement is republished")
    announce_ttl_s: float = Field(20.0, gt=0, description="how long a summary announcement stays valid")
    fetch_interval_s: float = Field(1.0, gt=0, description="how often peers' summary announcements are read and new summaries fetched")
    fetch_timeout_s: float = Field(10.0, gt=0, description="a summary fetch from one peer gives up after this long")
    keep_summaries: int = Field(4, ge=1, description="own summaries this node keeps for peers to fetch")
    robust_merge: bool = Field(
        True, description="merge each peer's delta clipped to 2x this node's own delta norm and weighted by the peer's "
                          "earned trust (off: the plain weighted mean, which one dishonest peer can steer)"
    )
    trust_initial: float = Field(0.2, ge=0, le=1, description="a newcomer's trust (weight factor) before it has earned more")
    trust_skip_below: float = Field(
        0.15, ge=0, le=1, description="a summary of a peer trusted less than this is judged but not merged"
    )

    @model_validator(mode="after")
    def _at_least_one_entry_per_chunk(self) -> SummariesConfig:
        if int(self.density * self.chunk_size) < 1:
            raise ValueError(
                f"summaries.density ({self.density:g}) x summaries.chunk_size ({self.chunk_size}) sends no entry of a chunk; "
                f"raise summaries.density to at least {1 / self.chunk_size:.6g} or summaries.chunk_size"
            )
        return self


class SchedulerConfig(_Section):
    """The computing-power-aware scheduler (swarmnode/scheduler/plan.py): once per swarm window
    it sets this node's local and external groups per step and its wait for peers' groups from
    measured speeds. Off: training.local_rollouts, external_rollouts and external_wait_s as set."""

    enabled: bool = Field(False, description="plan quotas per window from measured speeds (off: the fixed quotas)")
    min_steps_per_window: int = Field(2, ge=1, le=1000, description="Q_min: a slower node gets smaller batches to take this many steps a window")
    max_steps_per_window: int = Field(8, ge=1, le=1000, description="Q_max: a faster node gets larger batches to take at most this many")
    min_local_rollouts: int = Field(1, ge=1, description="the fewest own groups per step a plan gives")
    max_local_rollouts: int = Field(64, ge=1, description="the most own groups per step a plan gives")
    publish_share: float = Field(0.5, gt=0, le=1, description="one generated batch takes at most this share of a window")
    max_wait_share: float = Field(0.25, ge=0, le=1, description="a step waits for peers' groups at most this share of its length")

    @model_validator(mode="after")
    def _ranges(self) -> SchedulerConfig:
        if self.min_steps_per_window > self.max_steps_per_window:
            raise ValueError(f"scheduler.min_steps_per_window ({self.min_steps_per_window}) is over "
                             f"scheduler.max_steps_per_window ({self.max_steps_per_window})")
        if self.min_local_rollouts > self.max_local_rollouts:
            raise ValueError(f"scheduler.min_local_rollouts ({self.min_local_rollouts}) is over "
                             f"scheduler.max_local_rollouts ({self.max_local_rollouts})")
        return self


class LimitsConfig(_Section):
    """What one peer may cost this node: every bound on state, lifetimes, rates and sizes that
    a stranger's messages can reach (docs/security.md lists each with its rejection reason)."""

    max_peers: int = Field(1024, ge=1, description="peer-table entries; the least recently refreshed go first")
    max_tracked_senders: int = Field(1024, ge=1, description="per-sender ledgers and rejection counters kept (LRU)")
    max_values_per_key: int = Field(512, ge=1, description="distinct peers' values judged and kept under one DHT key")
    max_record_ttl_s: float = Field(120.0, gt=0, description="a peer record or announcement claiming a longer life is rejected")
    max_batch_age_s: float = Field(300.0, gt=0, description="a fetched rollout batch older than this is rejected as expired")
    serve_requests_per_s: float = Field(4.0, gt=0, description="fetch requests one peer may make of this node, per second")
    serve_burst: int = Field(8, ge=1, description="requests one peer may make at once above its rate")
    # A node asks only for what its steps take (rollouts.fetch_ahead_steps), well under this. A
    # fast peer can publish more (the tiny policy on most of a core: ~22 batches/s, flat and
    # informative apart); a node that fetches everything (fetch_ahead_steps 0) then defers the
    # rest to its next fetch and skips what the peer no longer keeps (rollouts.keep_batches).
    accept_batches_per_s: float = Field(16.0, gt=0, description="batches taken in from one peer, per second")
    accept_burst: int = Field(64, ge=1, description="batches one peer may deliver at once above its rate")
    max_concurrent_fetches: int = Field(8, ge=1, description="peers fetched from at the same time")
    foreign_completion_tokens_factor: float = Field(
        4.0, ge=1.0, description="another model's completion may re-tokenise to this x training.max_new_tokens"
    )
    external_max_logprob_gap: float = Field(
        1.0, gt=0, description="a peer whose samples' log-probs sit, pooled per step, more than this (nats/token) "
                               "below this policy's is implausible: its samples are dropped and counted"
    )
    summary_max_norm_ratio: float = Field(
        10.0, gt=1, description="a peer's summary whose L2 norm is over this x the largest of this node's own recent "
                                "summaries is rejected as norm_too_large"
    )
    max_summary_bytes: int = Field(
        4 * 2**20, ge=1024, description="a summary announced or served larger than this is not fetched / rejected"
    )


class StorageConfig(_Section):
    """Retention of the home's SQLite stores and what a failing checkpoint does."""

    rollouts_max_age_s: float = Field(86_400.0, gt=0, description="received groups and rejections older than this are deleted")
    rollouts_max_bytes: int = Field(256 * 2**20, ge=2**20, description="rollouts.sqlite is pruned (oldest first) to stay under this")
    # 256 MiB: a full day at full resolution even at the tiny policy's ~4 steps/s (docs/experiments/storage-growth.md).
    metrics_max_bytes: int = Field(256 * 2**20, ge=2**20, description="metrics.sqlite is pruned (oldest first) to stay under this")
    metrics_full_resolution_s: float = Field(86_400.0, gt=0, description="metrics older than this are downsampled")
    metrics_downsample_s: float = Field(600.0, gt=0, description="one row per metric and this many seconds once downsampled")
    maintenance_interval_s: float = Field(60.0, gt=0, description="how often retention and WAL checkpoints run")
    max_checkpoint_failures: int = Field(3, ge=1, description="failed checkpoint writes in a row before the daemon stops")


class LoggingConfig(_Section):
    """The node's log file, `<home>/logs/node.log` (`swarmnode logs`), and its periodic summary line."""

    max_bytes: int = Field(10 * 2**20, ge=1024, description="logs/node.log is rotated to node.log.1 once it would grow past this")
    backup_count: int = Field(5, ge=1, le=1000, description="rotated logs kept (node.log.1 ... node.log.N); the oldest is deleted")
    summary_interval_s: float = Field(
        60.0, gt=0, description="how often the log gets a one-line summary (step, reward, held-out accuracy, peers, sharing)"
    )


class NodeConfig(_Section):
    swarm: SwarmConfig = Field(default_factory=SwarmConfig)
    network: NetworkConfig = Field(default_factory=NetworkConfig)
    records: RecordConfig = Field(default_factory=RecordConfig)
    status: StatusConfig = Field(default_factory=StatusConfig)
    model: ModelConfig = Field(default_factory=ModelConfig)
    training: TrainingConfig = Field(default_factory=TrainingConfig)
    rollouts: RolloutGossipConfig = Field(default_factory=RolloutGossipConfig)
    summaries: SummariesConfig = Field(default_factory=SummariesConfig)
    scheduler: SchedulerConfig = Field(default_factory=SchedulerConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    storage: StorageConfig = Field(default_factory=StorageConfig)
    logging: LoggingConfig = Field(default_factory=LoggingConfig)

    @model_validator(mode="after")
    def _own_lifetimes_within_the_cap(self) -> "NodeConfig":
        # Peers apply the same cap: a node whose own records outlive it would be rejected.
        cap = self.limits.max_record_ttl_s
        for name, ttl in (
            ("records.ttl_s", self.records.ttl_s),
            ("rollouts.announce_ttl_s", self.rollouts.announce_ttl_s),
            ("summaries.announce_ttl_s", self.summaries.announce_ttl_s),
        ):
            if ttl > cap:
                raise ValueError(f"{name} ({ttl:g}s) is over limits.max_record_ttl_s ({cap:g}s); lower it or raise the cap")
        return self

    @model_validator(mode="after")
    def _generator_process_needs_hf(self) -> "NodeConfig":
        if self.training.generator == "process" and (self.model.backend != "hf" or self.model.device.split(":")[0] not in ("cpu", "cuda")):
            raise ValueError(
                f"training.generator: process runs the hf backend on cpu or cuda (model.backend is {self.model.backend}, "
                f"model.device is {self.model.device}); set training.generator: thread"
            )
        return self
