"""From a model of an :class:`~.encode.Encoding`'s clauses back to float32 inputs.

A model fixes a cell per variable; the witness picks float32 values in those cells that satisfy
every input constraint.
"""

from __future__ import annotations

import numpy as np


class Decoding:
    """The decoding part of :class:`~.encode.Encoding` (a mixin: it reads the encoding's
    ``order``, ``grids``, ``pairs`` and ``preference``)."""

    def truth(self, model: list[int]) -> np.ndarray:
        """A solver model as a bool array indexed by variable (variables beyond it are false)."""
        truth = np.zeros(self.top + 1, dtype=bool)
        signed = np.asarray(model, dtype=np.int64)
        positive = signed[(signed > 0) & (signed <= self.top)]
        truth[positive] = True
        return truth

    def cells(self, truth: np.ndarray) -> list[int]:
        """The cell of every variable under ``truth`` (from :meth:`truth`)."""
        return [int(truth[literals].sum()) if literals else 0 for literals in self.order]

    def witness(self, truth: np.ndarray) -> dict[str, np.ndarray]:
        """Float32 inputs in the model's cells that satisfy every input constraint.

        Each variable takes the value of its cell closest to its preferred value (the center of
        a distance or the reference of a change count, else 0). Two related variables (a tie,
        a change count or a distance between instances) in one cell take one value; in
        different cells, the closest ends of their cells, so every distance between them is the
        gap of their cells.
        """
        cells = self.cells(truth)
        value = [0.0] * self.n_vars
        for v in range(self.n_vars):
            value[v] = self.grids[self.feature_of[v]].closest(cells[v], self.preference[v])
        for a, b in sorted(self.pairs):
            if cells[a] == cells[b]:
                value[b] = value[a]
            elif cells[a] < cells[b]:
                value[a], value[b] = self._cell(a, cells)[1], self._cell(b, cells)[0]
            else:
                value[a], value[b] = self._cell(a, cells)[0], self._cell(b, cells)[1]
        return {
            name: np.array([value[v] for v in self.var[i]], dtype=np.float32)
            for i, name in enumerate(self.query.instances)
        }

    def _cell(self, v: int, cells: list[int]) -> tuple[float, float]:
        return self.grids[self.feature_of[v]].cell(cells[v])
