"""An exact propagator for sums of tree values, attached to CaDiCaL through IPASIR-UP.

A *group sum* is ``sum over groups of the group's value``; a group is one tree, and its value
is the integer weight of the tree's leaf that holds. The propagator sees a group through its
*ladder*: literals ``y_k`` meaning ``value >= v_k`` for the group's distinct weights
``v_0 < v_1 < ... < v_K`` (``y_0`` always holds and has no literal; the CNF ties ladders to
leaves, see :func:`ladder_clauses`). Weights are Python integers: exact, of any size.

A sum carries *thresholds* ``guard -> sum >= bound``; the engine adds one per output constraint
and per step of an optimisation, and turns them on and off through the guard (an assumption).
With ``best(g)`` the largest ``v_k`` whose ``y_k`` is not false, the sum is at most
``U = sum(best(g))``, so

* ``U < bound`` falsifies the guard (a conflict when the guard is true);
* with the guard true, every group needs ``value >= best(g) - (U - bound)``: the ladder literal
  of the smallest weight at least that is set.

An explanation is the guard, the propagated literal, and one false ladder literal per group
(``value < v_k``), with levels raised greedily while the sum stays below the bound: short
clauses, which CDCL learns from well. Explanations of propagations are computed only when the
solver asks for them, from a copy of the ladder state taken when the literal was propagated.

The propagator also makes the solver's decisions while a guided sum has an undecided tree
(:meth:`SumPropagator.decide`): it dives, setting trees to their best values, as A* expands. It
tracks assignments by decision level, so the engine switches off CaDiCaL's chronological
backtracking (which can assign a literal below the current level).

Standard pseudo-Boolean encodings were measured first, on 20 XGBoost trees of depth 4: one bound
of the adder encoding took 79 s to solve with 40-bit weights, and the BDD encoding made 1.5
million clauses with 12-bit weights. They know nothing of the one-leaf-per-tree structure,
which the ladders give the propagator directly.
"""

from __future__ import annotations

import time

from pysat.engines import Propagator

#: Check the deadline every this many calls of ``propagate``.
_CLOCK_EVERY = 32


def ladder_clauses(weights: list[int], leaves: list[list[int]], ladder: list[int]):
    """Clauses making ``ladder[k - 1]`` equivalent to ``value >= weights[k]``.

    ``weights`` rise strictly from ``weights[0]``; ``leaves[k]`` are the leaf literals of
    weight ``weights[k]``, exactly one leaf of the tree holds.
    """
    y = [0, *ladder]  # y[0] always holds
    clauses = [[-y[k + 1], y[k]] for k in range(1, len(ladder))]
    top = len(weights) - 1
    for k, group in enumerate(leaves):
        for leaf in group:
            if k >= 1:
                clauses.append([-leaf, y[k]])
            if k < top:
                clauses.append([-leaf, -y[k + 1]])
        # value >= v_k and not value >= v_(k+1): a leaf of weight v_k holds
        clause = [*group]
        if k >= 1:
            clause.append(-y[k])
        if k < top:
            clause.append(y[k + 1])
        clauses.append(clause)
    return clauses


class GroupSum:
    """One sum over ladders with non-negative integer weights.

    Attributes
    ----------
    literals, weights : list of list of int
        Per group, from the largest weight down: ``literals[g][i]`` is ``value >= weights[g][i]``;
        the last entry of every group is the smallest weight, with literal 0 (always holds).
    top : list of int
        Per group, the first entry whose literal is not false: ``best(g) = weights[g][top[g]]``.
    thresholds : list of (int, int)
        ``(guard, bound)``: ``guard -> sum >= bound``.
    """

    def __init__(self, groups: list[tuple[list[int], list[int]]]) -> None:
        self.literals = [[*reversed(literals), 0] for literals, _ in groups]
        self.weights = [list(reversed(weights)) for _, weights in groups]
        self.top = [0] * len(self.literals)
        self.total = sum(w[0] for w in self.weights)
        self.maximum = self.total
        self.thresholds: list[tuple[int, int]] = []
        self.index = -1


class SumPropagator(Propagator):
    """Propagates every threshold of every :class:`GroupSum`, and enforces a deadline.

    The deadline works through ``alive``, a literal the engine assumes in every call: once the
    deadline has passed, ``propagate`` falsifies it, the solver answers UNSAT under the
    assumptions, and the engine reads that as a time limit (:attr:`expired`).
    """

    def __init__(self, alive: int) -> None:
        super().__init__()
        self.alive = alive
        self.sums: list[GroupSum] = []
        # Indexed by variable (lists: these are read on every assignment the solver reports).
        self.watch: list[list[tuple[GroupSum, int, int]] | None] = []
        self.guarded: list[list[GroupSum] | None] = []
        self.value: list[bool | None] = []
        self.fixed: set[int] = set()
        self.trail: list[int] = []
        self.limits: list[int] = []
        self.dirty: set[int] = set()
        self.reasons: dict[int, tuple] = {}
        self.pending: list[list[int]] = []
        self.deadline: float | None = None
        self.expired = False
        self.calls = 0
        self.propagations = 0
        self.explanations = 0
        self.solver = None
        self.guides: list[tuple[GroupSum, float]] = []

    # -- set-up ------------------------------------------------------------------------------

    def attach(self, solver) -> None:
        self.solver = solver
        solver.connect_propagator(self)
        self._grow(self.alive)
        solver.observe(self.alive)

    def _grow(self, var: int) -> None:
        missing = var + 1 - len(self.value)
        if missing > 0:
            self.value += [None] * missing
            self.watch += [None] * missing
            self.guarded += [None] * missing

    def add_sum(self, groups: list[tuple[list[int], list[int]]]) -> GroupSum:
        """Register a sum: per group, its ladder literals and its weights (rising, one more
        weight than literals). Its literals are observed from now on."""
        s = GroupSum(groups)
        s.index = len(self.sums)
        self.sums.append(s)
        for g, literals in enumerate(s.literals):
            for i, literal in enumerate(literals[:-1]):
                self._grow(literal)
                if self.watch[literal] is None:
                    self.watch[literal] = []
                    self.solver.observe(literal)
                self.watch[literal].append((s, g, i))
                if self.value[literal] is False:
                    self._drop(s, g, i)
        return s

    def add_threshold(self, s: GroupSum, guard: int, bound: int) -> None:
        """``guard -> s >= bound`` (``guard`` a positive literal)."""
        s.thresholds.append((guard, bound))
        self._grow(guard)
        if self.guarded[guard] is None:
            self.guarded[guard] = []
            self.solver.observe(guard)
        self.guarded[guard].append(s)
        self.dirty.add(s.index)

    def _truth(self, literal: int) -> bool | None:
        value = self.value[abs(literal)]
        return None if value is None else value == (literal > 0)

    # -- state -------------------------------------------------------------------------------

    def _drop(self, s: GroupSum, g: int, i: int) -> None:
        """Ladder literal ``i`` of group ``g`` became false: if it was the best, move past every
        false literal (the chain clauses make the ones above it false as well, but they may be
        notified later; the state only ever counts literals the solver has reported)."""
        top = s.top[g]
        if i != top:
            return
        literals = s.literals[g]
        value = self.value
        while literals[i] and value[literals[i]] is False:
            i += 1
        s.total += s.weights[g][i] - s.weights[g][top]
        s.top[g] = i
        self.dirty.add(s.index)

    def _restore(self, s: GroupSum, g: int, i: int) -> None:
        """Ladder literal ``i`` of group ``g`` is unassigned again."""
        top = s.top[g]
        if i < top:
            s.total += s.weights[g][i] - s.weights[g][top]
            s.top[g] = i

    def on_assignment(self, lit: int, fixed: bool = False) -> None:
        var = lit if lit > 0 else -lit
        if fixed:
            self.fixed.add(var)
        value = self.value
        if value[var] is not None:
            return
        value[var] = lit > 0
        self.trail.append(var)
        if lit < 0:
            watched = self.watch[var]
            if watched is not None:
                for s, g, i in watched:
                    if i == s.top[g]:
                        self._drop(s, g, i)
        guarded = self.guarded[var]
        if guarded is not None:
            for s in guarded:
                self.dirty.add(s.index)

    def on_new_level(self) -> None:
        self.limits.append(len(self.trail))

    def on_backtrack(self, to: int) -> None:
        if len(self.limits) <= to:
            return
        start = self.limits[to]
        del self.limits[to:]
        kept = []
        value, watch = self.value, self.watch
        for var in reversed(self.trail[start:]):
            if var in self.fixed:
                kept.append(var)
                continue
            if value[var] is False and watch[var] is not None:
                for s, g, i in watch[var]:
                    if i < s.top[g]:
                        self._restore(s, g, i)
            value[var] = None
        del self.trail[start:]
        self.trail.extend(reversed(kept))
        self.dirty.update(range(len(self.sums)))

    # -- propagation -------------------------------------------------------------------------

    def propagate(self) -> list[int]:
        self.calls += 1
        if (
            self.deadline is not None
            and self.calls % _CLOCK_EVERY == 0
            and time.monotonic() > self.deadline
        ):
            self.expired = True
        if self.expired:
            if self._truth(self.alive) is False:
                return []
            self.reasons[-self.alive] = ([-self.alive],)
            return [-self.alive]
        result: list[int] = []
        while self.dirty:
            s = self.sums[self.dirty.pop()]
            if s.thresholds:
                self._propagate_sum(s, result)
        self.propagations += len(result)
        return result

    def _propagate_sum(self, s: GroupSum, result: list[int]) -> None:
        strongest: tuple[int, int] | None = None  # (bound, guard)
        for guard, bound in s.thresholds:
            truth = self._truth(guard)
            if truth is False:
                continue
            if s.total < bound:
                clause = [-guard, *self._explain(s.weights, s.literals, s.top, bound, -1, s.total)]
                self.reasons[-guard] = (clause,)
                result.append(-guard)
                if truth:
                    return  # a conflict: the solver analyses it before anything else
            elif truth and (strongest is None or bound > strongest[0]):
                strongest = (bound, guard)
        if strongest is None:
            return
        bound, guard = strongest
        slack = s.total - bound
        snapshot = None
        for g, weights in enumerate(s.weights):
            top = s.top[g]
            need = weights[top] - slack
            if weights[-1] >= need:
                continue
            # the smallest weight not below need: weights fall along the list
            j = top
            while weights[j + 1] >= need:
                j += 1
            literal = s.literals[g][j]
            if self._truth(literal) is None:
                if snapshot is None:
                    snapshot = list(s.top)
                rest = s.total - weights[top] + weights[j + 1]
                self.reasons[literal] = (literal, guard, s, bound, g, rest, snapshot)
                result.append(literal)

    def _explain(self, weights, literals, tops, bound: int, skip: int, total: int) -> list[int]:
        """One false ladder literal per group (but ``skip``) that keeps the sum below ``bound``;
        levels rise greedily while ``total`` (the sum at the current levels) stays below."""
        self.explanations += 1
        room = bound - 1 - total
        clause: list[int] = []
        for g, w in enumerate(weights):
            top = tops[g]
            if g == skip or top == 0:
                continue
            limit = w[top] + room
            i = top
            while i > 0 and w[i - 1] <= limit:
                i -= 1
            if i > 0:
                room -= w[i] - w[top]
                clause.append(literals[g][i - 1])
            else:
                room -= w[0] - w[top]
        return clause

    def decide(self) -> int:
        """Branch on a tree reaching its best value still possible: the tree whose best value
        lies furthest above its worst first (a greedy dive, and the split A* makes on the tree
        that bounds the sum most loosely). On 60 XGBoost trees of depth 5 this proved the
        minimum in 2.2 s, against 15 s when ranking trees by the drop to their next value and
        33 s with CaDiCaL's own choices."""
        best_range, choice = 0.0, 0
        value = self.value
        for s, unit in self.guides:
            literals = s.literals
            for g, weights in enumerate(s.weights):
                top = s.top[g]
                literal = literals[g][top]
                if literal and value[literal] is None:
                    spread = (weights[top] - weights[-1]) * unit
                    if spread > best_range:
                        best_range, choice = spread, literal
        return choice

    def guide(self, s: GroupSum) -> None:
        """Let :meth:`decide` dive on ``s`` (weights compared relative to its largest sum)."""
        self.guides.append((s, 1.0 / max(1, s.maximum)))

    def provide_reason(self, lit: int) -> list[int]:
        reason = self.reasons[lit]
        if len(reason) == 1:
            return reason[0]
        literal, guard, s, bound, g, rest, snapshot = reason
        return [literal, -guard, *self._explain(s.weights, s.literals, snapshot, bound, g, rest)]

    def check_model(self, model: list[int]) -> bool:
        """A complete assignment satisfies every threshold whose guard it sets (propagation is
        complete, so this fails only at the deadline); when it does not, :meth:`add_clause`
        gives the clause that excludes it."""
        truth = {abs(lit): lit > 0 for lit in model}
        if self.expired and truth.get(self.alive):
            self.pending.append([-self.alive])
            return False
        for s in self.sums:
            tops = [
                next(i for i, lit in enumerate(literals) if lit == 0 or truth.get(lit))
                for literals in s.literals
            ]
            total = sum(w[i] for w, i in zip(s.weights, tops, strict=True))
            for guard, bound in s.thresholds:
                if truth.get(guard) and total < bound:
                    self.pending.append(
                        [-guard, *self._explain(s.weights, s.literals, tops, bound, -1, total)]
                    )
                    return False
        return True

    def has_clause(self) -> bool:
        return bool(self.pending)

    def add_clause(self) -> list[int]:
        return self.pending.pop()
