"""The N best distinct solutions of a maximisation (``solutions = N``): what the anytime loop
(:mod:`.anytime`) keeps of the points it accepts, the value a state must beat to matter, and
how many of them are proven.

The search hands over complete states best first, and dives hand over others early. With N
asked, the loop cuts only the states that cannot beat the Nth best distinct value found (not the
best), so the search ends once no open state can improve the N: they are then the N best."""

from __future__ import annotations

from veritas_dsl.ir.distinct import counted_trees, leaf_combination
from veritas_dsl.ir.evaluate import Inputs
from veritas_dsl.ir.query import Query
from veritas_dsl.result import Witness
from veritas_dsl.solvers.astar import kernels as K
from veritas_dsl.solvers.astar.outcome import Outcome
from veritas_dsl.solvers.astar.problem import Problem


class Pool:
    """The best ``wanted`` distinct solutions found so far, by leaf combination
    (:func:`~veritas_dsl.ir.distinct.leaf_combination`), each with its value (max form)."""

    def __init__(self, wanted: int, problems: list[Problem]) -> None:
        self.wanted = wanted
        self.found: dict[tuple, tuple[float, Witness]] = {}
        self.trees: dict[int, list] = {}  # per branch query (alive for the run): its trees
        for problem in problems:  # the kernels leave the incumbent to the loop (cut below)
            problem.params[K.P_SOLUTIONS] = wanted

    def add(self, query: Query, inputs: Inputs, value: float) -> bool:
        """Keep the point ``inputs`` of ``query``, of value ``value``, when its combination is
        new and among the best ``wanted``; whether the Nth best value rose."""
        trees = self.trees.setdefault(id(query), counted_trees(query))
        key = leaf_combination(query, inputs, trees)
        if key in self.found:
            return False  # another complete state of the same leaves (its value is the same)
        before = self.cut()
        self.found[key] = (value, Witness(inputs, value))
        if len(self.found) > self.wanted:
            del self.found[min(self.found, key=lambda k: self.found[k][0])]
        return self.cut() != before

    def ordered(self) -> list[tuple[float, Witness]]:
        """The solutions kept, best first (ties in the order found)."""
        return sorted(self.found.values(), key=lambda item: -item[0])

    def cut(self) -> float | None:
        """The value a state must beat to hold one of the N best: the Nth best found, once N
        are; None before."""
        if len(self.found) < self.wanted:
            return None
        return min(value for value, _ in self.found.values())

    def proven(self, open_bound: float | None) -> int:
        """How many of :meth:`ordered`, from the first, no open state can beat (max form:
        ``open_bound`` the best bound still open, None when none is: all of them)."""
        values = [value for value, _ in self.ordered()]
        if open_bound is None:
            return len(values)
        return next((i for i, value in enumerate(values) if value < open_bound), len(values))

    def report(self, outcome: Outcome, open_bound: float | None) -> None:
        """Hand ``outcome`` the solutions kept, best first, and how many are proven."""
        outcome.solutions = [witness for _, witness in self.ordered()]
        outcome.proven = self.proven(open_bound)
