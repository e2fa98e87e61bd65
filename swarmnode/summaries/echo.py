"""Agreement that an echo cannot earn: a peer's summary read against this node's direction with
the part that only repeats this node's own published summaries taken out.

A peer judged by cos(d_j, D) (summaries/trust.py) could earn full trust by sending back this
node's own summaries, which it fetches like anyone else: they agree with D better than any
honest summary (cos ~ 0.23 on the bundled policy against honest peers' ~ 0.01 - 0.02), and the
trust earned is then cashed in. So the agreement leaves out what d_j shares with the last
OWN_KEPT summaries this node published, S = [s_1 .. s_K]:

    e_j = S c,   c = G^+ S^T d_j,   G = S^T S        (e_j: d_j projected on their span)

    a_j = (d_j . D - max(0, e_j . D)) / (|d_j| |D|)

Only an agreeing echo part is taken out: a summary that points against what this node sent
(a sign flip, of an echo or of anything else) keeps all of its disagreement. An exact echo has
a_j ~ 0, whatever it is mixed with it is judged on that alone. An honest summary shares little
with this node's sparse summaries: on the bundled policy (4 groups x 4 samples, H = 4) its
agreement lost about a fifth of its size and none of its signal-to-noise ratio. D itself holds
what this node never sent (the error feedback residual, 98% of the coordinates), which only a
peer that learns the same thing agrees with.

The summaries are kept sparse (indices and values over the parameters flattened in one order);
G is updated as each one is added, so judging a peer costs one flattening, K sparse dot
products and a K x K solve.
"""
from __future__ import annotations

from collections import deque

import torch
from torch import Tensor

from swarmnode.summaries.robust import dot

Tensors = dict[str, Tensor]
OWN_KEPT = 5  # an echo sends back what this node published lately; older ones weigh little in it


def flat(tensors: Tensors, names: list[str]) -> Tensor:
    """The tensors named, flattened and concatenated in that order (float32)."""
    return torch.cat([tensors[name].reshape(-1).float() for name in names])


def sparse_of(vector: Tensor) -> tuple[Tensor, Tensor]:
    """(indices, values) of a flat vector's nonzero entries."""
    index = vector.nonzero().flatten()
    return index, vector[index].clone()


def echo_free_agreement(d_dot_direction: float, d_norm: float, direction_norm: float, d_on_own: Tensor,
                        gram: Tensor, own_on_direction: Tensor) -> float:
    """a = (d . D - max(0, e . D)) / (|d| |D|), e . D = c . S^T D, c = G^+ S^T d.

    `d_on_own` = S^T d, `gram` = G, `own_on_direction` = S^T D (float64). 0 when |d| or |D| is 0."""
    if d_norm <= 0 or direction_norm <= 0:
        return 0.0
    echo_on_direction = 0.0
    if gram.numel():
        c = torch.linalg.pinv(gram, hermitian=True) @ d_on_own
        echo_on_direction = float(c @ own_on_direction)
    return (d_dot_direction - max(0.0, echo_on_direction)) / (d_norm * direction_norm)


class OwnSummaries:
    """This node's last OWN_KEPT published summaries (sparse, over the parameters flattened in
    one order) and their Gram matrix."""

    def __init__(self, kept: int = OWN_KEPT):
        self._sent: deque[tuple[Tensor, Tensor]] = deque(maxlen=kept)
        self._gram = torch.zeros(0, 0, dtype=torch.float64)
        self._names: list[str] | None = None  # the order of the flattening, from the first summary

    def add(self, sent: Tensors) -> None:
        """Remember a summary as published (its dense decoded values)."""
        if self._names is None:
            self._names = list(sent)
        vector = flat(sent, self._names)
        row = [float(torch.dot(vector[index], values)) for index, values in self._sent]
        n = len(self._sent)
        gram = torch.zeros(n + 1, n + 1, dtype=torch.float64)
        gram[:n, :n] = self._gram
        gram[n, :n] = gram[:n, n] = torch.tensor(row, dtype=torch.float64)
        gram[n, n] = float(torch.dot(vector, vector))
        if n == self._sent.maxlen:
            gram = gram[1:, 1:]
        self._sent.append(sparse_of(vector))
        self._gram = gram

    @property
    def gram(self) -> Tensor:
        """G = S^T S of the kept summaries (oldest first)."""
        return self._gram

    def flat(self, dense: Tensors) -> Tensor | None:
        """`dense` flattened in the kept summaries' order (None before the first one)."""
        return None if self._names is None else flat(dense, self._names)

    def on(self, vector: Tensor | None) -> Tensor:
        """S^T x for a flattened x (float64, oldest first; empty before the first summary)."""
        if vector is None:
            return torch.zeros(0, dtype=torch.float64)
        return torch.tensor([float(torch.dot(vector[index], values)) for index, values in self._sent],
                            dtype=torch.float64)

    def agreement(self, d: Tensors, d_norm: float, direction: Tensors, direction_norm: float,
                  own_on_direction: Tensor) -> float:
        """echo_free_agreement of a peer's decoded summary `d` (dense) with this node's direction;
        `own_on_direction` is `on(flat(direction))`, computed once per outer step."""
        return echo_free_agreement(dot(d, direction), d_norm, direction_norm, self.on(self.flat(d)), self.gram,
                                   own_on_direction)

    def __len__(self) -> int:
        return len(self._sent)
