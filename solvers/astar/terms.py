"""The terms of one conjunction (step 3 of :mod:`~veritas_dsl.solvers.astar.problem`): the
objective and every output constraint in maximisation form, each (model, instance) copy's
contribution to them, their constant parts, and their thresholds in units with a slack that
covers the float64 rounding of the models' sums.
"""

from __future__ import annotations

import math
import weakref
from fractions import Fraction

import numpy as np

from veritas_dsl.ir.query import OutputTerm


def plan_terms(plan, outputs):
    """Terms in maximisation form: (terms, signs, strict flags, right-hand sides or None), the
    objective of ``plan`` (a :class:`~veritas_dsl.solvers.astar.problem.Plan`) first."""
    terms, signs, strict, rhs = [], [], [], []
    if plan.objective is not None:
        terms.append(plan.objective)
        signs.append(1.0)
        strict.append(False)
        rhs.append(None)
    for c in outputs:
        terms.append(c.term)
        signs.append(1.0 if c.op in (">", ">=") else -1.0)
        strict.append(c.op in (">", "<"))
        rhs.append(float(c.rhs))
    return terms, signs, strict, rhs


def term_copies(query, terms, signs):
    """``{(model, instance): float64 (n_nodes, K)}``: each node's contribution to every term."""
    copies: dict[tuple[str, str], np.ndarray] = {}
    for k, (term, sign) in enumerate(zip(terms, signs, strict=True)):
        for atom in term.atoms:
            model = query.models[atom.model]
            key = (atom.model, atom.instance)
            if key not in copies:
                copies[key] = np.zeros((model.n_nodes, len(terms)))
            copies[key][:, k] += sign * atom.coef * model.value[:, atom.output]
    return {key: values for key, values in sorted(copies.items()) if np.any(values)}


def _threshold_units(target: Fraction, strict: bool, q: int) -> int:
    """Least integer ``u`` with ``u / 2**q >= target`` (``>`` when ``strict``), clamped."""
    scaled = target * Fraction(2) ** q
    bound = math.floor(scaled) + 1 if strict else math.ceil(scaled)
    return max(-(2**62), min(2**62, bound))


def constant_part(query, term: OutputTerm, sign: float) -> Fraction:
    """The part of ``sign * term`` no tree decides: its constant and the models' base scores."""
    total = Fraction(term.constant)
    for a in term.atoms:
        base = float(query.models[a.model].base_score[a.output])
        total += Fraction(a.coef) * Fraction(base)
    return Fraction(sign) * total


def _magnitude(query, term: OutputTerm) -> float:
    """A bound on the magnitude of every partial sum of ``term``."""
    total = abs(term.constant)
    for atom in term.atoms:
        model = query.models[atom.model]
        total += abs(atom.coef) * _largest_sum(model, atom.output)
    return total


_LARGEST_SUM: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _largest_sum(model, output: int) -> float:
    """``|base| + sum over trees of the largest |leaf value|`` of one output (cached per model)."""
    cached = _LARGEST_SUM.setdefault(model, {})
    if output not in cached:
        magnitude = np.where(model.feature < 0, np.abs(model.value[:, output]), 0.0)
        largest = np.maximum.reduceat(magnitude, model.tree_offsets[:-1])
        cached[output] = abs(float(model.base_score[output])) + float(largest.sum())
    return cached[output]


def fill_terms(problem, terms, signs, strict, rhs, q: int) -> None:
    """Fill ``problem.terms`` (each constrained term's thresholds in units) and
    ``problem.term_slack_value``, once its trees, ``u_base`` and units (``2**q``) are set."""
    query, exact = problem.query, problem.exact_units
    n_terms = len(terms)
    thr = np.zeros(n_terms, dtype=np.int64)
    sure = np.zeros(n_terms, dtype=np.int64)
    cons = np.zeros(n_terms, dtype=np.int8)
    slack_values = []
    n_additions = sum(m.n_trees for m in query.models.values()) * len(query.instances)
    for k in range(n_terms):
        magnitude = _magnitude(query, terms[k]) + abs(rhs[k] if rhs[k] is not None else 0.0)
        # the model's float64 sums, then the term's: a generous bound on their rounding
        value_slack = magnitude * (n_additions + 16) * 2.0**-50
        slack_values.append(value_slack)
        if rhs[k] is None:
            continue
        cons[k] = 1
        target = Fraction(signs[k] * rhs[k]) - problem.term_constant[k]
        thr[k] = _threshold_units(target - Fraction(value_slack), strict[k], q)
        sure[k] = _threshold_units(target + Fraction(value_slack), strict[k], q)
        if not exact:  # rounded-up units exceed the true sum by less than one per tree
            sure[k] = min(sure[k] + problem.n_trees, 2**62)
    problem.terms = (thr, sure, cons, problem.u_base)
    problem.term_slack_value = tuple(slack_values)
