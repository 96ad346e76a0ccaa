"""The solver calls of one SAT solve: clauses handed over, output sums, models made witnesses.

Output constraints become thresholds on the propagator's integer sums, relaxed by the float64
rounding error of the sum (:mod:`.linear`). Every model is turned into float32 inputs and
evaluated in float64; a model whose float64 value breaks an output constraint is excluded by a
clause over its leaves, and the call repeats.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np

from veritas_dsl.ir.evaluate import holds, model_outputs, model_votes, term_value
from veritas_dsl.ir.query import OutputConstraint, OutputTerm
from veritas_dsl.solvers.interrupt import run_interruptible
from veritas_dsl.solvers.sat.linear import LinearForm, linear_form, scale_of
from veritas_dsl.solvers.sat.propagate import GroupSum, ladder_clauses

#: What a call with a conflict budget returns when the budget runs out.
UNKNOWN = "unknown"

#: Clauses handed to the solver between two looks at the clock.
CLAUSE_CHUNK = 20_000


class SolverCalls:
    """The solver part of the engine's search (a mixin: it uses the search's ``encoding``,
    ``solver``, ``propagator``, ``deadline``, ``query``, ``required`` and ``votes``, and fills
    ``forms``, ``sums``, ``flushed`` and ``stats``)."""

    def _flush(self) -> None:
        """Move clauses the encoding produced since the last call into the solver, watching the
        deadline between chunks."""
        clauses = self.encoding.clauses
        while self.flushed < len(clauses):
            self.deadline.check()
            chunk = clauses[self.flushed : self.flushed + CLAUSE_CHUNK]
            self.solver.append_formula(chunk)
            self.flushed += len(chunk)

    def _form(self, term: OutputTerm) -> LinearForm:
        if term not in self.forms:
            self.forms[term] = linear_form(term, self.query, self.encoding)
        return self.forms[term]

    def _sum(self, term: OutputTerm, up: bool) -> tuple[GroupSum, Fraction]:
        """The propagator sum of ``term`` with its integer scale: ``Q = S (E - offset)`` when
        ``up``, else its complement ``S span - Q``, both exact integers, over a ladder per tree."""
        key = (term, up)
        if key not in self.sums:
            form = self._form(term)
            scale = scale_of(form)
            groups = []
            for group in form.groups:
                self.deadline.check()
                weights = {lit: int(w * scale) for lit, w in group}
                if not up:
                    top = max(weights.values())
                    weights = {lit: top - w for lit, w in weights.items()}
                levels = sorted(set(weights.values()))
                position = {w: k for k, w in enumerate(levels)}
                leaves: list[list[int]] = [[] for _ in levels]
                for lit, w in weights.items():
                    leaves[position[w]].append(lit)
                ladder = [self.encoding.new_var() for _ in levels[1:]]
                for clause in ladder_clauses(levels, leaves, ladder):
                    self.encoding.clause(clause)
                groups.append((ladder, levels))
            self._flush()
            self.sums[key] = (self.propagator.add_sum(groups), scale)
        return self.sums[key]

    def _threshold(
        self, term: OutputTerm, at_least: bool, bound: Fraction, strict: bool, guard: int
    ) -> None:
        """``guard -> E > bound`` (``>=`` unless strict) when ``at_least``, else ``E < bound``."""
        form = self._form(term)
        s, scale = self._sum(term, at_least)
        target = scale * (bound - form.offset)
        if at_least:
            k = math.floor(target) + 1 if strict else math.ceil(target)
        else:
            top = math.ceil(target) - 1 if strict else math.floor(target)
            k = s.maximum - top
        if k <= 0:
            return
        if k > s.maximum:
            self.encoding.clause([-guard])
            return
        self.propagator.add_threshold(s, guard, k)

    def _output_constraint(self, c: OutputConstraint, guard: int) -> None:
        """The rounding-safe relaxation of ``c``: ``F op rhs`` implies ``E op' rhs -+ error``."""
        form = self._form(c.term)
        rhs = Fraction(c.rhs)
        exact = form.error == 0
        if c.op in (">", ">="):
            strict = c.op == ">" and exact
            self._threshold(c.term, True, rhs - form.error, strict, guard)
        else:
            strict = c.op == "<" and exact
            self._threshold(c.term, False, rhs + form.error, strict, guard)

    def _call(self, assumptions: list[int], budget: int | None = None):
        """Solve under ``assumptions``: the model's truth array, False, None at the deadline, or
        ``UNKNOWN`` when ``budget`` (conflicts) runs out first."""
        self._flush()
        if self.deadline.passed():
            return None
        self.stats["solver_calls"] += 1
        assumptions = [self.alive, *assumptions]
        if budget is None:
            answer = self._in_thread(lambda: self.solver.solve(assumptions=assumptions))
        else:
            self.solver.conf_budget(budget)
            answer = self._in_thread(lambda: self.solver.solve_limited(assumptions=assumptions))
            if answer is None and not self.propagator.expired:
                return UNKNOWN
        if not answer:
            return None if self.propagator.expired else False
        return self.encoding.truth(self.solver.get_model())

    def _in_thread(self, call):
        """``call()`` in a worker thread; Ctrl-C meanwhile stops the solver through ``alive``."""

        def interrupt() -> None:
            self.interrupted = True
            self.propagator.expired = True

        started = time.monotonic()
        try:
            return run_interruptible(call, interrupt)
        finally:
            self.stats["solver_s"] += time.monotonic() - started

    def _witness(self, assumptions: list[int], budget: int | None = None):
        """A model under ``assumptions`` turned into inputs that satisfy the query in float64.

        Models whose float64 outputs break a guarded output constraint are excluded, one leaf
        combination at a time, and the search repeats. Returns (inputs, outputs, truth) for the
        model, False when there is none, None at the deadline, ``UNKNOWN`` past ``budget``.
        """
        while True:
            truth = self._call(assumptions, budget)
            if truth is None or truth is False or truth is UNKNOWN:
                return truth
            inputs = self.encoding.witness(truth)
            outputs = model_outputs(self.query, inputs)
            votes = model_votes(self.query, inputs) if self.votes else None
            self._check_sums(truth, outputs)
            if all(holds(c, inputs, outputs, votes) for c in self.required):
                return inputs, outputs, truth
            excluded = 0
            for guarded in self.encoding.outputs:
                guard = guarded.guard or self.encoding.true
                if truth[guard] and not holds(guarded.constraint, inputs, outputs):
                    chosen = self._form(guarded.constraint.term).chosen(truth)
                    self.encoding.clause([-guard, *(-lit for lit in chosen)])
                    excluded += 1
            if not excluded:
                broken = next(c for c in self.required if not holds(c, inputs, outputs, votes))
                raise AssertionError(f"sat engine: witness {inputs} breaks {broken}")
            self.stats["excluded_by_rounding"] += excluded

    def _check_sums(self, truth: np.ndarray, outputs) -> None:
        """Every exact sum must lie within its error bound of the float64 value (else the leaf
        literals disagree with the inputs: a bug)."""
        for term, form in self.forms.items():
            exact = form.value(truth)
            value = term_value(term, outputs)
            if abs(Fraction(value) - exact) > form.error:
                raise AssertionError(
                    f"sat engine: leaves of the model give {float(exact)}, the inputs {value}"
                )
