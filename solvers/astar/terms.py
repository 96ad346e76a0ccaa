"""The terms of one conjunction (step 3 of :mod:`~veritas_dsl.solvers.astar.problem`): the
objective and every output constraint in maximisation form, each (model, instance) copy's
contribution to them, their constant parts, and their thresholds in units with a slack that
covers the float64 rounding of the models' sums.
"""

from __future__ import annotations

import dataclasses
import math
import weakref
from fractions import Fraction

import numpy as np

from veritas_dsl.ir.query import OutputTerm
from veritas_dsl.model.ensemble import Ensemble
from veritas_dsl.solvers.base import UnsupportedQuery


def plan_terms(plan, outputs):
    """Terms in maximisation form: (terms, signs, strict flags, right-hand sides or None), the
    objective of ``plan`` (a :class:`~veritas_dsl.solvers.astar.problem.Plan`) first."""
    terms, signs, strict, rhs = [], [], [], []
    for objective in plan.objectives:
        terms.append(objective)
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


#: The model of the one-leaf tree that carries the objectives' constant parts (a NUL: no spec
#: can declare it).
CONSTANTS = "\0constants"


def level_constants(problem, query, copies, n_objectives: int):
    """``(query, copies)`` with the objectives' constant parts (``problem.term_constant[:n]``)
    made equal, their differences moved into the units by a tree of one leaf (model
    :data:`CONSTANTS`), which :func:`~.trees.fill_trees` adds to ``u_base``.

    Why: the search key of a maximisation of the least objective is the least of their bounds
    in units (``kernels.keys.state_key``); units leave constants out, so objectives whose
    constants differ would be compared wrongly. Unchanged when there is at most one objective
    or their constants agree. Raises :class:`UnsupportedQuery` when a difference is not a
    float64 (so not exact in units)."""
    constants = problem.term_constant[:n_objectives]
    if n_objectives <= 1 or len(set(constants)) == 1:
        return query, copies
    common = min(constants)
    if any(Fraction(float(c - common)) != c - common for c in constants):
        raise UnsupportedQuery(
            f"query {query.name}: the constant parts of the terms of its min differ by more "
            "than a float64 holds; the milp and oracle engines take it"
        )
    leaf = np.zeros((1, len(problem.term_constant)))
    leaf[0, :n_objectives] = [float(c - common) for c in constants]
    problem.term_constant = (common,) * n_objectives + problem.term_constant[n_objectives:]
    stump = Ensemble(
        feature=[-1], threshold=[0.0], left=[-1], right=[-1], value=[[0.0]],
        tree_offsets=[0, 1], base_score=[0.0], feature_names=tuple(f.name for f in query.features),
    )  # fmt: skip
    leveled = dataclasses.replace(query, models={**query.models, CONSTANTS: stump})
    return leveled, {**copies, (CONSTANTS, query.instances[0]): leaf}


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
