"""Per-window plans: how much this node generates, trains and takes from peers (pure).

FedCompass (arXiv 2309.14675) gives a slow client fewer local steps so that its update lands in
the same aggregation round as a fast client's, instead of a longer round for everyone. Here the
swarm's round is its time window (swarm.window_s; peers read the current and previous window),
and a node plans, once per window, from its own measurements and its peers' records:

- I, local groups per step. One generated batch must fit in `publish_share` of a window (what
  the node publishes lands in a window its peers read) and a step must be short enough for
  Q_min steps per window, both to generate and to train (its own groups get their configured
  share I0 / B of what a step can train); within that, the node keeps its configured I. A node too slow for
  either gets a smaller I (less work), never a longer window. A node so fast that it would take
  more than Q_max steps per window gets a larger I (up to max_local): its version counter, the
  clock on which peers' groups age here, then runs no faster than Q_max per window, so a slow
  peer's group is not stale by the time it arrives.
- J, peers' groups per step: a smaller batch is filled back to its configured size B = I0 + J0
  with peers' groups, a larger one keeps the configured split (J = I * J0 / I0), but only as
  many as peers deliver per step (a step never waits for groups that will not come) and only
  as many as Q_min steps per window leave time to train.
- the wait for them: what is missing from the pool at the supply rate, at most `max_wait_share`
  of a step. Groups that arrive later stay in the pool for the next step: late work is never
  lost.

Speeds are seconds per group on this node's clock. A peer's supply is the groups per second
this node has seen arrive from it (observed) and what its record claims, whichever is lower: a
claim is never trusted beyond what the deliveries show, and an observed rate counts only as far
as the peer still claims it (a peer that slowed down says so before the average catches up).
A node fetches only while its pool is short, so deliveries show no more than it asked for:
when its pool held enough in the last window (`saturated`), peers supply what the configured
split asks and the plan takes it whole, without a wait.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True)
class PlanLimits:
    """What the node's config allows. I0 and J0 are the configured local and external groups
    per step (training.local_rollouts, training.external_rollouts)."""

    window_s: float
    local_rollouts: int  # I0
    external_rollouts: int  # J0
    min_local: int = 1
    max_local: int = 32
    min_steps_per_window: int = 2  # Q_min
    max_steps_per_window: int = 8  # Q_max
    publish_share: float = 0.5  # one generated batch takes at most this share of a window
    max_wait_share: float = 0.25  # the wait for peers' groups: at most this share of a step
    fixed_wait_s: float = 0.0  # training.external_wait_s: the plan while nothing is measured

    def __post_init__(self) -> None:
        if not (math.isfinite(self.window_s) and self.window_s > 0):
            raise ValueError(f"window_s must be > 0, got {self.window_s}")
        if not 1 <= self.min_local <= self.max_local:
            raise ValueError(f"need 1 <= min_local <= max_local, got {self.min_local}, {self.max_local}")
        if not 1 <= self.min_steps_per_window <= self.max_steps_per_window:
            raise ValueError("need 1 <= min_steps_per_window <= max_steps_per_window")


@dataclass(frozen=True)
class OwnSpeed:
    """This node's measured costs, slowdown included (scheduler.speed.SpeedMeter.own_speed): a
    batch of n groups takes a_g + g * n seconds to generate, a step over n groups a_t + t * n
    to train. The fixed parts matter: a step's optimizer update and weight hand-over cost the
    same for 1 group as for 16, so a plan that took seconds per group as constant would see a
    smaller batch cost more per group and shrink it further, down to 1."""

    generate_s: float  # g: seconds per generated and scored group
    train_s: float  # t: seconds per trained group
    generate_fixed_s: float = 0.0  # a_g: seconds per batch, whatever its size
    train_fixed_s: float = 0.0  # a_t: seconds per step, whatever its size


@dataclass(frozen=True)
class PeerSupply:
    """One peer, keyed by its verified id: groups/s its record claims it generates (None: no
    figure) and groups/s this node has seen arrive from it (None: nothing yet)."""

    peer_id: str
    claimed_per_s: float | None
    observed_per_s: float | None


@dataclass(frozen=True)
class Plan:
    local_rollouts: int  # I
    external_rollouts: int  # J
    external_wait_s: float
    steps_per_window: float | None  # Q (None while nothing is measured)
    reason: str
    supplies: tuple[PeerSupply, ...] = ()  # the peers' supply the plan was made with (status shows it)


def trusted_supply(claimed: float | None, observed: float | None) -> float:
    """A peer's groups/s as this node plans with it: min(claimed, observed), a missing claim
    standing for no limit, a missing or invalid observation for 0 (nothing seen, nothing
    expected)."""
    if observed is None or not math.isfinite(observed) or observed <= 0:
        return 0.0
    if claimed is None or not math.isfinite(claimed) or claimed < 0:
        return observed
    return min(claimed, observed)


def supply_rate(peers: Iterable[PeerSupply]) -> float:
    """A = sum over peers of trusted_supply: peers' groups arriving here per second."""
    return sum(trusted_supply(p.claimed_per_s, p.observed_per_s) for p in peers)


def step_seconds(local: int, external: int, speed: OwnSpeed) -> float:
    """One step's wall time with the generator and trainer running at once (async):
    max(a_g + g * I, a_t + t * (I + J)); the slower of the two sets the pace."""
    return max(speed.generate_fixed_s + local * speed.generate_s,
               speed.train_fixed_s + (local + external) * speed.train_s)


def choose_local(speed: OwnSpeed, limits: PlanLimits) -> tuple[int, str]:
    """I and why: the configured I0 within [I_low, I_high], then within [min_local, max_local],

        I_high = floor(min((publish_share * W - a_g) / g, (T - a_g) / g, (I0 / B) * (T - a_t) / t))
        I_low  = ceil(min((T' - a_g) / g, (I0 / B) * (T' - a_t) / t))

    with T = W / Q_min the longest step and T' = W / Q_max the shortest: a batch lands in the
    window, Q_min steps fit, generating and training (own groups get the share I0 / B of what a
    step trains), and at most Q_max steps, a step of I own groups training about I * B / I0
    groups. W is the window, (a_g, g, a_t, t) this node's OwnSpeed, B = I0 + J0 the configured
    batch. When I_high < I_low (training, not generation, is slow) I_high wins:
    less work is always the answer to missing the window."""
    w, g, t = limits.window_s, speed.generate_s, speed.train_s
    a_g, a_t = speed.generate_fixed_s, speed.train_fixed_s
    longest, shortest = w / limits.min_steps_per_window, w / limits.max_steps_per_window
    own_share = limits.local_rollouts / (limits.local_rollouts + limits.external_rollouts)
    high = math.floor(min((limits.publish_share * w - a_g) / g, (longest - a_g) / g, own_share * (longest - a_t) / t) + 1e-9)
    low = math.ceil(min((shortest - a_g) / g, own_share * (shortest - a_t) / t) - 1e-9)
    local = limits.local_rollouts
    reason = "configured"
    if local < low:
        local, reason = low, f"fast: more so <= {limits.max_steps_per_window} steps a window"
    if local > high:  # also when I_low > I_high: less work wins
        local, reason = high, f"slow: fewer so >= {limits.min_steps_per_window} steps fit a window"
    if local < limits.min_local:
        local, reason = limits.min_local, "slower than the window even at the smallest batch"
    elif local > limits.max_local:
        local, reason = limits.max_local, f"fast: capped at max_local {limits.max_local}"
    return local, reason


def choose_external(local: int, speed: OwnSpeed, supply: float, limits: PlanLimits) -> int:
    """J = min(F, ceil(A * step_seconds(I, F)), floor((W / Q_min - a_t) / t) - I), at least 0,
    with F = max(B - I, floor(I * J0 / I0)): refill the batch to B = I0 + J0 with peers' groups
    (or keep the configured split when the plan grew I), no more than arrive during such a step
    at supply A (rounded up: a peer whose group arrives every few steps still gets it trained,
    the step taking what is there), nor more than leave Q_min steps of training per window W. With J0 = 0 (the node
    takes no peers' groups) it stays 0."""
    if limits.external_rollouts <= 0:
        return 0
    fill = max(limits.local_rollouts + limits.external_rollouts - local,
               local * limits.external_rollouts // limits.local_rollouts)
    arriving = fill if math.isinf(supply) else math.ceil(supply * step_seconds(local, fill, speed) - 1e-9)
    longest = limits.window_s / limits.min_steps_per_window
    trainable = math.floor((longest - speed.train_fixed_s) / speed.train_s + 1e-9) - local
    return max(0, min(fill, arriving, trainable))


def local_for_max_steps(local: int, external: int, speed: OwnSpeed, limits: PlanLimits) -> int:
    """I raised, when J came out below the configured split (peers deliver less), so that a step
    of I + J groups still lasts at least T' = W / Q_max:

        I' = min(max_local, max(I, ceil(min((T' - a_g) / g, (T' - a_t) / t - J))))

    choose_local sized I for a step that also trains I * J0 / I0 peers' groups; with fewer, the
    step is shorter and the node would take more than Q_max steps a window."""
    shortest = limits.window_s / limits.max_steps_per_window
    needed = math.ceil(min((shortest - speed.generate_fixed_s) / speed.generate_s,
                           (shortest - speed.train_fixed_s) / speed.train_s - external) - 1e-9)
    return min(limits.max_local, max(local, needed))


def external_wait(external: int, step_s: float, supply: float, limits: PlanLimits) -> float:
    """The wait for J peers' groups: J / A (the time they take to arrive at supply A), at most
    max_wait_share of a step; 0 when J is 0."""
    if external <= 0 or supply <= 0:
        return 0.0
    return min(external / supply, limits.max_wait_share * step_s)


def fixed_plan(limits: PlanLimits, reason: str, supplies: tuple[PeerSupply, ...] = ()) -> Plan:
    """The configured quotas (I0, J0, training.external_wait_s): the plan before any measurement."""
    return Plan(limits.local_rollouts, limits.external_rollouts, limits.fixed_wait_s, None, reason, supplies)


def make_plan(speed: OwnSpeed | None, peers: Iterable[PeerSupply], limits: PlanLimits, saturated: bool = False) -> Plan:
    """This window's plan from this node's speed and its peers' supply (module doc); with
    `saturated` (the pool held enough in the last window) the supply counts as unbounded."""
    peers = tuple(peers)
    if speed is None or not all(math.isfinite(x) and x > 0 for x in (speed.generate_s, speed.train_s)) \
            or not all(math.isfinite(x) and x >= 0 for x in (speed.generate_fixed_s, speed.train_fixed_s)):
        return fixed_plan(limits, "measuring: configured quotas until a batch and a step are timed", peers)
    supply = math.inf if saturated else supply_rate(peers)
    local, why = choose_local(speed, limits)
    external = choose_external(local, speed, supply, limits)
    raised = local_for_max_steps(local, external, speed, limits)
    if raised > local:  # peers supply fewer groups than the split assumed: more own ones
        local, why = raised, f"fast: more so <= {limits.max_steps_per_window} steps a window"
        external = choose_external(local, speed, supply, limits)
    step = step_seconds(local, external, speed)
    wait = external_wait(external, step, supply, limits)
    steps = limits.window_s / (step + wait)
    return Plan(local, external, round(wait, 3), round(steps, 2),
                f"{why}; s = a + b x groups: generate {speed.generate_fixed_s:.2g} + {speed.generate_s:.2g}, "
                f"train {speed.train_fixed_s:.2g} + {speed.train_s:.2g}; "
                + ("peers supply what it asks (its pool filled)" if saturated else f"peers supply {supply:.3g} groups/s"),
                peers)


def claimed_groups_per_s(tokens_per_s: float | None, tokens_per_group: float | None) -> float | None:
    """A peer's claimed generation speed in groups/s: its published completion tokens/s over
    this node's own mean tokens per group (same tasks, similar completions); None when either
    is unknown or not a positive finite number (a record carries 0 until its node has measured)."""
    if tokens_per_s is None or tokens_per_group is None:
        return None
    if not (math.isfinite(tokens_per_s) and math.isfinite(tokens_per_group)) or tokens_per_s <= 0 or tokens_per_group <= 0:
        return None
    return tokens_per_s / tokens_per_group
