"""Output terms as sums over leaf literals, exact integer weights, and the float64 error bound.

An output term ``constant + sum(coef * model(instance)[output])`` is, on a combination of leaves,
the exact rational ``E = offset + sum of the weights of the true leaves``: one group of leaf
literals per tree, exactly one of which is true, each leaf weighing ``sum(coef * leaf value)``.

The rounding scheme
    Leaf values, base scores and coefficients are float64 numbers, hence dyadic rationals, so one
    power of two ``S`` (:func:`scale_of`) turns every weight into an exact integer:
    ``Q = S (E - offset)`` is a sum of Python integers, and the propagator compares it with
    integer bounds without any rounding. (Multiplying by a power of two only shifts exponents, so
    nothing is lost however small or spread the values are.)

    What remains inexact is the query's own semantics: outputs are the float64 values ``F`` that
    ``Ensemble.eval`` and ``term_value`` compute, adding leaf values in tree order (or, for a
    model of exact fractions, adding the fractions exactly and rounding once: each leaf value
    is then within ``u |value|`` of its fraction). They differ from ``E`` by at most
    :func:`rounding_error` (0 when every partial sum is representable, as with values of few
    significant bits, and leaves are their fractions). The engine encodes ``F >= rhs`` as
    ``E >= rhs - error``, which every combination satisfying ``F >= rhs`` also satisfies: a
    rounded constraint never cuts off a true solution, so UNSAT is a proof. A model of the
    rounded constraint can break the exact one only within ``error`` of ``rhs``; the engine
    evaluates every model in float64 and excludes its leaf combination with a clause when it
    does (at most the finitely many combinations within ``error`` of the bound).

Bounds found on exact rationals are reported as the nearest float64 on their safe side
(:func:`float_up`, :func:`float_down`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from veritas_dsl.ir.query import OutputTerm, Query

#: The unit roundoff of float64.
_U = Fraction(1, 2**53)


@dataclass(frozen=True)
class LinearForm:
    """``E = offset + sum over groups of the weight of the group's true literal``.

    Weights are exact non-negative rationals (each group's smallest weight is moved into
    ``offset``, so every group has a leaf of weight 0); exactly one literal of every group is
    true in every model of the encoding.
    ``error`` bounds ``|F - E|``, ``F`` the float64 value of the term.
    """

    offset: Fraction
    groups: tuple[tuple[tuple[int, Fraction], ...], ...]
    error: Fraction
    paired: int = 0
    """How many trees were read on two instances and became one group of leaf pairs."""

    def value(self, truth: np.ndarray) -> Fraction:
        """``E`` under a model (``truth[var]``)."""
        total = self.offset
        for group in self.groups:
            total += sum((w for literal, w in group if truth[literal]), Fraction(0))
        return total

    def chosen(self, truth: np.ndarray) -> list[int]:
        """The true literal of every group."""
        return [literal for group in self.groups for literal, _ in group if truth[literal]]


def linear_form(term: OutputTerm, query: Query, encoding) -> LinearForm:
    """The term as a :class:`LinearForm` over the leaf literals of ``encoding``.

    A tree read on two instances (``model(x2) - model(x1)``) becomes one group of pairs of
    leaves when few pairs are compatible (:meth:`Encoding.leaf_pairs`): the sum then knows that
    the two leaves move together, and a tree that cannot tell the instances apart weighs 0.
    Raises :class:`~veritas_dsl.solvers.base.OutOfTime` once the encoding's deadline passes.
    """
    constant = Fraction(term.constant)
    groups: dict[tuple[str, str, int], dict[int, Fraction]] = {}  # by node
    for atom in term.atoms:
        model = query.models[atom.model]
        coef = Fraction(atom.coef)
        constant += coef * Fraction(float(model.base_score[atom.output]))
        for t in range(model.n_trees):
            group = groups.setdefault((atom.model, atom.instance, t), {})
            start, stop = model.tree_offsets[t], model.tree_offsets[t + 1]
            for node in range(start, stop):
                if model.feature[node] < 0:
                    weight = coef * Fraction(float(model.value[node, atom.output]))
                    group[node] = group.get(node, 0) + weight
    by_literal: list[dict[int, Fraction]] = []
    merged = set()
    for (model_name, instance, t), group in groups.items():
        encoding.deadline.check()
        if (model_name, instance, t) in merged:
            continue
        others = [
            key for key in groups if key[0] == model_name and key[2] == t and key[1] != instance
        ]
        if len(others) == 1:
            other = groups[others[0]]
            limit = 2 * (len(group) + len(other))
            pairs = encoding.leaf_pairs(model_name, t, instance, others[0][1], limit)
            if pairs is not None:
                merged.update({(model_name, instance, t), others[0]})
                by_literal.append({p: group[a] + other[b] for p, a, b in pairs})
                continue
        literal = encoding.leaves[model_name, instance]
        by_literal.append({int(literal[node]): w for node, w in group.items()})
    shifted = []
    for group in by_literal:
        low = min(group.values())
        constant += low
        shifted.append(tuple((literal, w - low) for literal, w in group.items()))
    return LinearForm(constant, tuple(shifted), rounding_error(term, query), len(merged) // 2)


def _fraction_bits(value: Fraction) -> int:
    """``e`` such that ``value`` is an integer times ``2**-e`` (values here are dyadic)."""
    return max(0, value.denominator.bit_length() - 1)


def rounding_error(term: OutputTerm, query: Query) -> Fraction:
    """A bound on ``|F - E|`` over every combination of leaves: 0 when float64 adds exactly.

    ``F`` adds, per (model, instance), the base score and one leaf per tree in tree order, then
    ``constant + coef * margin`` atom by atom. Every rounding is at most ``u |result|`` with
    ``u = 2**-53``, and every intermediate is at most the sum of the magnitudes that built it.
    When every intermediate is a multiple of ``2**-e`` below ``2**(53 - e)``, nothing rounds.
    """
    exact = True
    error = Fraction(0)
    total_magnitude = abs(Fraction(term.constant))
    term_bits = _fraction_bits(Fraction(term.constant))
    for atom in term.atoms:
        model = query.models[atom.model]
        values = [Fraction(float(model.base_score[atom.output]))]
        magnitude = abs(values[0])
        for t in range(model.n_trees):
            start, stop = model.tree_offsets[t], model.tree_offsets[t + 1]
            leaf = [
                Fraction(float(v))
                for v, f in zip(
                    model.value[start:stop, atom.output], model.feature[start:stop], strict=True
                )
                if f < 0
            ]
            values += leaf
            magnitude += max(abs(v) for v in leaf)
        bits = max(_fraction_bits(v) for v in values)
        coef = Fraction(atom.coef)
        product_bits = bits + _fraction_bits(coef)
        if magnitude * 2**bits > 2**53 or abs(coef) * magnitude * 2**product_bits > 2**53:
            exact = False
        if model.fractions is not None and not model.fractions.dyadic():
            exact = False  # leaf values are roundings of the fractions the model adds
        term_bits = max(term_bits, product_bits)
        sums = model.n_trees * _U * magnitude * 2  # the margin's rounding, generously
        error += abs(coef) * sums + _U * abs(coef) * (magnitude + sums) * 2  # and the product
        total_magnitude += abs(coef) * (magnitude + sums) * 2
    if exact and total_magnitude * 2**term_bits <= 2**53:
        return Fraction(0)
    return error + len(term.atoms) * _U * total_magnitude * 2  # the atoms' additions


def scale_of(form: LinearForm) -> Fraction:
    """``S = 2**e``, the smallest power of two that makes every weight of ``form`` an integer.

    Weights are sums of products of float64 numbers, so they are dyadic rationals and such an
    ``S`` exists; ``S * w`` is then exact, however large (Python integers).
    """
    bits = max((_fraction_bits(w) for group in form.groups for _, w in group), default=0)
    return Fraction(2**bits)


def float_up(value: Fraction) -> float:
    """The smallest float64 not below ``value``."""
    rounded = float(value)
    if Fraction(rounded) < value:
        rounded = math.nextafter(rounded, math.inf)
    return rounded


def float_down(value: Fraction) -> float:
    """The largest float64 not above ``value``."""
    rounded = float(value)
    if Fraction(rounded) > value:
        rounded = math.nextafter(rounded, -math.inf)
    return rounded
