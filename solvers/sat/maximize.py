"""Maximisation by bound tightening on the integer sum of the term (see :mod:`.engine`)."""

from __future__ import annotations

import math
from fractions import Fraction

from veritas_dsl.ir.bounds import trivial_bounds
from veritas_dsl.ir.evaluate import term_value
from veritas_dsl.ir.query import Maximize, MaximizeMin, OutputTerm, infeasible_optimum
from veritas_dsl.result import Result, Termination, Witness
from veritas_dsl.solvers.sat.linear import float_up
from veritas_dsl.solvers.sat.solver import UNKNOWN

#: Conflicts a probe for a better upper bound may spend (see ``_maximize``); None: no limit.
PROBE_CONFLICTS: int | None = 20_000
#: Probe while the gap between the bounds is above this, relative to the best value (at least
#: 1); then only ask for anything better than the best.
PROBE_WHILE = Fraction(1, 1000)


class Maximizing:
    """The maximisation strategy of the engine's search (a mixin over its solver calls)."""

    def _first(self, goal: Maximize | MaximizeMin, value_of) -> Witness | Result:
        """The first witness, its value from its outputs by ``value_of``; or the result when
        there is none: the search stopped, or no input meets the constraints."""
        found = self._witness([])
        if found is None:
            return self._result(self.stop, -math.inf, math.inf)
        if found is False:
            bound = infeasible_optimum(goal)
            self._point(bound, bound)
            return self._result(Termination.INFEASIBLE, bound, bound)
        self.witness = Witness(found[0], value_of(found[1]))
        return self.witness

    def _maximize(self, term: OutputTerm) -> Result:
        """Maximise ``term``."""

        def report(termination, lower, upper, best=None):
            witness = None if best is None else Witness(best, best_value)
            return self._result(termination, lower, upper, witness)

        point = self._point
        first = self._first(Maximize(term), lambda outputs: term_value(term, outputs))
        if isinstance(first, Result):
            return first
        best, best_value = first.inputs, first.value
        _, upper = trivial_bounds(self.query)  # until the sum of the term gives better
        point(best_value, max(best_value, upper))
        form = self._form(term)
        s, scale = self._sum(term, True)
        self.propagator.guides.clear()
        self.propagator.guide(s)
        q_max = s.maximum

        def upper_of(q_max: int) -> float:
            return float_up(form.offset + Fraction(q_max) / scale + form.error)

        point(best_value, max(best_value, upper_of(q_max)))
        probing = True
        while True:
            q_need = math.floor(scale * (Fraction(best_value) - form.error - form.offset)) + 1
            if q_need > q_max:
                point(best_value, best_value)
                return report(Termination.OPTIMAL, best_value, best_value, best)
            # Ask for anything better than the best witness: the one call that can prove it
            # optimal. Before it, a probe halfway to the upper bound, with a budget: when it
            # is cheap it lowers the upper bound (or finds a much better point); bisecting
            # without a budget repeats the hardest calls, those near the optimum (on 100 trees
            # of depth 6 it took 219 s where this takes about 30).
            mid, budget = q_need, None
            wide = q_max - q_need > PROBE_WHILE * scale * max(1, abs(Fraction(best_value)))
            if probing and wide:
                mid, budget = q_need + (q_max - q_need + 1) // 2, PROBE_CONFLICTS
            selector = self.encoding.new_var()
            self.propagator.add_threshold(s, selector, mid)
            found = self._witness([selector], budget)
            self.encoding.clause([-selector])
            s.thresholds.remove((selector, mid))
            if found is UNKNOWN:
                probing = False
                continue
            probing = True
            if found is None:
                return report(self.stop, best_value, max(best_value, upper_of(q_max)), best)
            if found is False:
                q_max = mid - 1
            else:
                truth = found[2]
                value = term_value(term, found[1])
                if value > best_value:
                    best, best_value = found[0], value
                    self.witness = Witness(best, best_value)
                else:
                    # Within the float64 error of the sum, this combination scores no better
                    # than the best witness: it need not be seen again.
                    self.encoding.clause([-lit for lit in form.chosen(truth)])
                    self.stats["excluded_ties"] += 1
            point(best_value, max(best_value, upper_of(q_max)))

    def _maximize_min(self, terms: tuple[OutputTerm, ...]) -> Result:
        """Maximise the least of ``terms`` (:class:`MaximizeMin`): one sum per term, and each
        step asks every sum at once for more than a value ``v``, under one selector.

        Sound by the bound of each sum: ``Q_k < need_k(v)`` means term ``k`` is at most ``v`` in
        float64, so "no model" proves every input has a term, hence the least, at most ``v``.
        The call for anything better than the best witness (``v`` its value) proves it optimal;
        before it, probes halfway to the upper bound with a budget, as :meth:`_maximize` does.
        A model no better than the best witness (within float64 rounding) has its leaf
        combination, which fixes every term, excluded."""

        def value_of(outputs) -> float:
            return min(term_value(term, outputs) for term in terms)

        def report(termination, lower, upper, best=None):
            witness = None if best is None else Witness(best, best_value)
            return self._result(termination, lower, upper, witness)

        point = self._point
        first = self._first(MaximizeMin(terms), value_of)
        if isinstance(first, Result):
            return first
        best, best_value = first.inputs, first.value
        forms = [self._form(term) for term in terms]
        sums = [self._sum(term, True) for term in terms]
        self.propagator.guides.clear()
        for s, _ in sums:
            self.propagator.guide(s)

        def need(k: int, value: Fraction) -> int:
            """Least ``Q_k`` at which term ``k`` may exceed ``value`` in float64."""
            (_, scale), form = sums[k], forms[k]
            return math.floor(scale * (value - form.error - form.offset)) + 1

        _, upper = trivial_bounds(self.query)
        for (s, scale), form in zip(sums, forms, strict=True):
            upper = min(upper, float_up(form.offset + Fraction(s.maximum) / scale + form.error))
        point(best_value, max(best_value, upper))
        probing = True
        while True:
            if best_value >= upper:
                point(best_value, best_value)
                return report(Termination.OPTIMAL, best_value, best_value, best)
            target, budget = Fraction(best_value), None
            wide = Fraction(upper) - target > PROBE_WHILE * max(1, abs(target))
            if probing and wide:
                target, budget = (target + Fraction(upper)) / 2, PROBE_CONFLICTS
            needs = [need(k, target) for k in range(len(terms))]
            if any(n > s.maximum for n, (s, _) in zip(needs, sums, strict=True)):
                found = False  # some term never exceeds the target
            else:
                selector = self.encoding.new_var()
                for n, (s, _) in zip(needs, sums, strict=True):
                    self.propagator.add_threshold(s, selector, n)
                found = self._witness([selector], budget)
                self.encoding.clause([-selector])
                for n, (s, _) in zip(needs, sums, strict=True):
                    s.thresholds.remove((selector, n))
            if found is UNKNOWN:
                probing = False
                continue
            probing = True
            if found is None:
                return report(self.stop, best_value, max(best_value, upper), best)
            if found is False:
                upper = min(upper, float_up(target))
            else:
                truth, value = found[2], value_of(found[1])
                if value > best_value:
                    best, best_value = found[0], value
                    self.witness = Witness(best, best_value)
                else:
                    chosen = [lit for form in forms for lit in form.chosen(truth)]
                    self.encoding.clause([-lit for lit in chosen])
                    self.stats["excluded_ties"] += 1
            point(best_value, max(best_value, upper))
