"""Stand-ins shared by the gossip tests: the transport and training a RolloutGossip talks to, sealed
batches and fetch answers, and a RolloutGossip built on them."""
from swarmnode.config import NodeConfig
from swarmnode.node.gossip import PeerStandings, RolloutGossip
from swarmnode.protocol.codec import PROTOCOL_VERSION, VersionedSigner
from swarmnode.protocol.generated import rollout_batch_pb2
from swarmnode.protocol.rollout_messages import CheckedRolloutAnnouncement, seal_rollout_batch
from swarmnode.swarm.peers import MessageStats, PeerTable, RecordIntake
from swarmnode.trainer.intake import IntakeResult

NOW = 1_000_000.0


class Transport:
    def __init__(self):
        self.response = b""

    def dht_time(self):
        return NOW

    async def request(self, peer, protocol, payload, timeout):
        return self.response

    def child_processes(self):
        return []


class Training:
    fingerprint = tokenizer_fingerprint = "fp"
    base_fingerprint = ""
    eos_ids = {0}

    def __init__(self):
        self.received = []
        self.wanted = True  # the pool wants peers' groups (SwarmInputs.external_wanted)
        self.ready = False
        self.inputs = self  # SwarmInputs' part: ready, external_wanted, receive
        self.outputs = self  # TrainerOutputs' part: take_groups
        self.steps_to_share: list[list] = []  # each step's groups, handed to share_loop once

    def take_groups(self):
        steps, self.steps_to_share = self.steps_to_share, []
        return steps

    def external_wanted(self):
        return self.wanted

    def receive(self, batch, sender):
        self.received.append(batch.batch_id)
        return IntakeResult(groups=["group"] * len(batch.groups), same_model=True)


def sealed(identity, batch_id):
    batch = rollout_batch_pb2.RolloutBatch(window=1, policy_version=1, model_fingerprint="fp", batch_id=batch_id,
                                           created_at=NOW, temperature=1.0, top_p=1.0)
    group = batch.groups.add(prompt="1+2=")
    group.task.task = "sum2"
    group.completions.add(text="3", token_ids=[51], logprobs=[-0.5])
    return seal_rollout_batch(identity, batch)


def response(*envelopes):
    return rollout_batch_pb2.RolloutFetchResponse(envelopes=list(envelopes)).SerializeToString()


def make_gossip(tmp_path, make_identity, **limits):
    config = NodeConfig.model_validate({"limits": limits})
    me, peer = VersionedSigner(make_identity()), make_identity()
    stats = MessageStats()
    records = RecordIntake(PeerTable(me.peer_id), stats, "s", 10.0)
    transport = Transport()
    standings = PeerStandings.open(config, stats, tmp_path, transport.dht_time)
    gossip = RolloutGossip(config, me, transport, Training(), records, standings)
    announcement = rollout_batch_pb2.RolloutAnnouncement(peer_id=peer.peer_id, first_batch_id=1, last_batch_id=9)
    return gossip, peer, CheckedRolloutAnnouncement(announcement, peer.public_key, PROTOCOL_VERSION)


def envelopes(answer: bytes) -> list[bytes]:
    return list(rollout_batch_pb2.RolloutFetchResponse.FromString(answer).envelopes)
