"""The boundary between the node's event loop and the trainer thread, one named interface each way.

- `SwarmInputs` (event loop and its worker threads -> trainer thread): how many peers share
  this node's base, the scheduler's plan (the runner's quotas), and peers' batches.
- `TrainerOutputs` (trainer thread -> event loop): the loaded policy's fingerprints, groups to
  share, summaries to publish, and the `TrainingListeners` told of implausible senders,
  outer-step verdicts and a fatal error.

The speed meter and the status behind `TrainingService.snapshot()` are lock-protected objects
of their own, read by the event loop through the service.
"""
from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from swarmnode.config import NodeConfig
from swarmnode.node.training.step_recorder import OutgoingSummary, offer_newest
from swarmnode.protocol.generated import rollout_batch_pb2
from swarmnode.scheduler import DeliveryMeter, Plan
from swarmnode.summaries import OuterResult
from swarmnode.swarm.gossip.rollout_bookkeeping import fetch_wanted
from swarmnode.trainer.buffer import ExperienceBuffer
from swarmnode.trainer.experience import ScoredGroup
from swarmnode.trainer.intake import IntakeResult, RolloutIntake
from swarmnode.trainer.loop import Quotas

if TYPE_CHECKING:
    from swarmnode.node.training.setup import PolicyIdentity

OUTGOING_CAPACITY = 256  # generated batches waiting to be shared; the oldest go when full
SUMMARIES_CAPACITY = 4  # summaries waiting to be published; the oldest go when full


def _ignore(_) -> None:
    pass


@dataclass(frozen=True)
class TrainingListeners:
    """Who hears about what happens on the trainer thread (each is called there)."""

    # {sender: samples} the trainer dropped as implausible (rollout gossip blames the senders).
    on_implausible: Callable[[dict[str, int]], None] = _ignore
    # Each outer step that judged peers' summaries (summary gossip takes its verdicts).
    on_outer_step: Callable[[OuterResult], None] = _ignore
    # A one-line reason training ended on an error (any exception on the trainer thread, e.g.
    # storage.max_checkpoint_failures writes in a row failed); None: the reason is logged and
    # the node serves on without training.
    on_fatal: Callable[[str], None] | None = None


def plan_quotas(plan: Plan) -> Quotas:
    return Quotas(plan.local_rollouts, plan.external_rollouts, plan.external_wait_s)


class SwarmInputs:
    """What the event loop (and its worker threads) hands the trainer thread. Thread-safe.

    The trainer thread connects its parts once they exist: `plan_to` (the runner's quotas) and
    `open_intake` (peers' batches are taken from then on, `ready`)."""

    def __init__(self, config: NodeConfig, deliveries: DeliveryMeter, version: Callable[[], int], plan: Plan):
        self.config = config
        self.deliveries = deliveries  # groups accepted per peer (the scheduler's observed supply)
        self._version = version  # the trainer's current policy version
        self._lock = threading.Lock()
        self._same_base_peers = 0
        self._plan = plan
        self._set_quotas: Callable[[Quotas], None] | None = None
        self._intake: RolloutIntake | None = None
        self._buffer: ExperienceBuffer | None = None

    # -- peers of this node's base (the daemon's poll loop counts them) ------------------------

    def set_same_base_peers(self, count: int) -> None:
        with self._lock:
            self._same_base_peers = count

    def same_base_peers(self) -> int:
        """Summaries go out only while someone can merge them."""
        with self._lock:
            return self._same_base_peers

    # -- the scheduler's plan ------------------------------------------------------------------

    def apply_plan(self, plan: Plan) -> None:
        """The runner takes `plan`'s quotas from its next batch and step (any thread)."""
        with self._lock:
            self._plan = plan
            if self._set_quotas is not None:
                self._set_quotas(plan_quotas(plan))

    def plan(self) -> Plan:
        with self._lock:
            return self._plan

    def plan_to(self, set_quotas: Callable[[Quotas], None]) -> None:
        """The runner exists (trainer thread): it gets the newest plan's quotas now and each later one."""
        with self._lock:
            self._set_quotas = set_quotas
            set_quotas(plan_quotas(self._plan))

    # -- peers' batches (worker threads) -------------------------------------------------------

    def open_intake(self, intake: RolloutIntake | None, buffer: ExperienceBuffer) -> None:
        """The intake and the experience buffer exist (trainer thread): peers' batches can be taken."""
        with self._lock:
            self._intake, self._buffer = intake, buffer

    @property
    def ready(self) -> bool:
        """The policy is loaded and the buffer exists: peers' rollouts can be taken."""
        return self._intake is not None and self._buffer is not None

    def receive(self, batch: rollout_batch_pb2.RolloutBatch, sender: str) -> IntakeResult:
        """Check and re-score a peer's batch; accepted groups go to the experience buffer."""
        intake, buffer = self._intake, self._buffer
        assert intake is not None and buffer is not None
        result = intake.accept(batch, sender, self._version())
        if result.groups:
            buffer.put(result.groups)
            self.deliveries.delivered(sender, len(result.groups))
        return result

    def external_wanted(self) -> bool:
        """Whether gossip should fetch peers' batches now (swarm/gossip/rollout_bookkeeping.fetch_wanted)."""
        buffer, ahead = self._buffer, self.config.rollouts.fetch_ahead_steps
        if buffer is None or ahead <= 0:
            return True  # no pool yet, or fetch everything: no need to count the pool (event loop)
        wanted = fetch_wanted(buffer.external_usable(self._version()), self.plan().external_rollouts, ahead)
        if not wanted:
            # Fetches pause, with the scheduler on too: a pool that held enough tells it that peers
            # supply what it asks, so a node need not check groups it will never train to know that.
            self.deliveries.pool_held_enough()
        return wanted


class TrainerOutputs:
    """What the trainer thread hands the event loop: the loaded policy's fingerprints, its groups
    (with rollouts.share), its summaries, and what it tells `listeners` (called on the trainer thread)."""

    def __init__(self, listeners: TrainingListeners, share: bool):
        self.listeners = listeners
        self.share_groups = share
        # Set once by the trainer thread (single reads: no lock), empty until the policy is loaded.
        self.identity: PolicyIdentity | None = None
        self.base_fingerprint = ""
        self.groups: queue.Queue[list[ScoredGroup]] = queue.Queue(maxsize=OUTGOING_CAPACITY)
        self.summaries: queue.Queue[OutgoingSummary] = queue.Queue(maxsize=SUMMARIES_CAPACITY)

    # -- trainer side ----------------------------------------------------------------------------

    def policy_loaded(self, identity: PolicyIdentity) -> None:
        """The policy is loaded: its model and tokenizer fingerprints, its end-of-sequence ids."""
        self.identity = identity

    def base_hashed(self, base_fingerprint: str) -> None:
        """The fingerprint of the base weights every node of this base started from."""
        self.base_fingerprint = base_fingerprint

    def share(self, groups: list[ScoredGroup]) -> None:
        if self.share_groups:
            offer_newest(self.groups, groups)  # peers want fresh rollouts: the oldest go when full

    # -- event-loop side -------------------------------------------------------------------------

    def take_groups(self) -> list[list[ScoredGroup]]:
        """Every batch of groups waiting to be shared, oldest first."""
        drained = []
        while True:
            try:
                drained.append(self.groups.get_nowait())
            except queue.Empty:
                return drained

    def take_summary(self) -> OutgoingSummary | None:
        """The oldest summary waiting to be published, if any."""
        try:
            return self.summaries.get_nowait()
        except queue.Empty:
            return None
