"""The brute-force oracle: exact answers for tiny ensembles, the reference for every engine.

It enumerates every reachable combination of leaves (one per tree of every model and instance the
query reads). A combination fixes every output, so the objective is a constant over its box; the
oracle then looks for an input in that box satisfying the other constraints
(:mod:`~veritas_dsl.solvers.oracle.points`). For a maximisation it tries combinations from the best
value down and stops at the first one with an input, so the answer is the optimum by construction.
It shares no code with the search or encoding of any engine.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from veritas_dsl.ir.bounds import trivial_bounds
from veritas_dsl.ir.distinct import leaf_combination
from veritas_dsl.ir.evaluate import goal_value, model_outputs, model_votes
from veritas_dsl.ir.logic import negate
from veritas_dsl.ir.query import (
    Ball,
    Interval,
    MinimizeDistance,
    Prove,
    Query,
    Row,
    Tie,
    goal_terms,
    infeasible_optimum,
    maximizes,
    weight_of,
)
from veritas_dsl.ir.reductions import Chain
from veritas_dsl.ir.root import Root
from veritas_dsl.result import Result, Termination, Witness
from veritas_dsl.solvers.base import (
    ChainedEngine,
    Limits,
    UnsupportedQuery,
)
from veritas_dsl.solvers.oracle import CAPABILITIES, available
from veritas_dsl.solvers.oracle.boxes import build_space, initial_box
from veritas_dsl.solvers.oracle.enumerate import Combination, combinations, reachable_counts
from veritas_dsl.solvers.oracle.points import choices, find_point

#: The oracle refuses queries with more reachable leaf combinations than this.
MAX_COMBINATIONS = 200_000
#: The oracle refuses queries whose one-hot groups and change counts could be met in more ways
#: than this per leaf combination (it tries them all; a feature nothing else measures costs none).
MAX_CHOICES = 4096
#: Boxes make most combinations unreachable; beyond this many times the limit, even before
#: pruning, enumeration is hopeless and the oracle refuses at once.
_HOPELESS = 10_000


class OracleEngine(ChainedEngine):
    """Exhaustive enumeration; exact on every IR construct, for tiny ensembles only."""

    name = "oracle"
    capabilities = CAPABILITIES
    available = staticmethod(available)
    #: None: the reference answers every query as written, sharing no rewrite with the engines.
    chain = Chain()

    def __init__(self, max_combinations: int = MAX_COMBINATIONS) -> None:
        self.max_combinations = max_combinations

    def solve_reduced(self, query: Query, limits: Limits, *, progress=None) -> Result:
        """Answer ``query`` exactly, or raise :class:`UnsupportedQuery` when it is too large.

        An exact program it cannot finish or round onto float32 raises
        :class:`~.program.GridError` or :class:`~.rational.ProgramError`, which the entry point
        (:func:`veritas_dsl.solvers.solve.solve`) reports as an ``error`` Result, as it does
        every engine's faults.

        Stopped by the time limit or Ctrl-C, it reports what the combinations tried so far
        prove: none better than the next one has an input (for a distance, than its box's).
        """
        start = time.monotonic()
        deadline = None if limits.timeout_s is None else start + limits.timeout_s
        known = _Known(*trivial_bounds(query))
        stop = limits.stop
        if limits.solutions:  # the N best, best first: the combinations are tried in that order
            known.solutions, known.wanted, stop = {}, limits.solutions, None
        try:
            result = self._solve(query, deadline, known, stop)
        except TimeoutError:
            result = _unknown(query, Termination.TIME_LIMIT, known)
        except _Settled:
            result = _unknown(query, Termination.DECIDED, known)
        except KeyboardInterrupt:
            result = _unknown(query, Termination.INTERRUPTED, known)
        result.time_s = time.monotonic() - start
        return result

    def _solve(self, query: Query, deadline: float | None, known: _Known, stop) -> Result:
        """The answer; ``known`` follows the bounds as they tighten, for a stop (at the
        deadline, or once they settle what ``stop`` asks)."""
        goal = query.goal
        space = build_space(query)
        box = initial_box(query, space)
        if box is not None:
            self._refuse_hopeless(query, reachable_counts(query, space, *box))
            ways = choices(query, space, *box)
            if ways > MAX_CHOICES:
                raise UnsupportedQuery(
                    f"query {query.name} could meet its one-hot groups and change counts in "
                    f"{ways} ways per leaf combination; the brute-force oracle tries at most "
                    f"{MAX_CHOICES}"
                )
        rest = tuple(c for c in query.constraints if not _folded_into_box(c))
        if isinstance(goal, Prove):
            rest += (negate(goal.conclusion),)
        distance_goal = goal if isinstance(goal, MinimizeDistance) else None
        candidates: list[tuple[float, Combination]] = []
        if box is not None:
            for combination in combinations(query, space, *box, self.max_combinations, deadline):
                candidates.append((_order_key(query, space, combination), combination))
        candidates.sort(key=lambda item: item[0])

        best: tuple[float, Witness] | None = None
        lowest = math.inf  # the least lower bound of the boxes searched, for a distance goal
        for key, combination in candidates:
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError
            if distance_goal is not None and best is not None and key >= best[0]:
                break  # no box left can be closer than the best point found
            known.tighten(query, key)
            if stop is not None and stop.reached(known.lower, known.upper):
                raise _Settled
            point = find_point(
                query,
                space,
                combination.lo,
                combination.hi,
                rest,
                combination.margins,
                combination.votes,
                distance_goal,
            )
            if point is None:
                continue
            value = point.value
            if goal_terms(goal):  # a combination fixes every output: the value is exact
                value = goal_value(goal, combination.margins)
            witness = Witness(point.inputs, value)
            _check_outputs(query, point.inputs, combination)
            if distance_goal is None:
                best = best or (key, witness)
                if known.enough(query, witness):
                    break
                continue
            lowest = min(lowest, point.lower)
            if best is None or value < best[1].value:
                best = (value, witness)
                known.upper, known.witness = value, witness

        if best is None:
            return _infeasible(query)
        value = best[1].value
        lower = value if distance_goal is None else min(lowest, value)
        result = Result(
            query=query.name,
            engine=OracleEngine.name,
            termination=Termination.OPTIMAL,
            lower=lower,
            upper=value,
            witnesses=[best[1]],
            stats={"combinations": len(candidates)},
        )
        known.hand_over(result)
        if lower != value:
            result.message = (
                "the closest float32 point the oracle found lies beyond the exact (real) optimum; "
                "the float32 optimum is in between"
            )
        return result

    def _refuse_hopeless(self, query: Query, reachable: list[int]) -> None:
        """Refuse at once when even a generous share of the leaf combinations the query's box
        reaches is too many."""
        product = int(np.prod(reachable, dtype=object))
        if product > self.max_combinations * _HOPELESS:
            raise UnsupportedQuery(
                f"query {query.name} combines {_count(product)} leaves; the brute-force oracle "
                "answers tiny ensembles only"
            )


def _count(n: int) -> str:
    """A large count in short scientific notation; beyond a float64 (a product of many trees'
    leaf counts can be), by its number of digits."""
    return f"{n:.3g}" if n < 10**300 else f"about 1e{len(str(n)) - 1}"


def _folded_into_box(c) -> bool:
    """Constraints that :func:`initial_box` and the variable numbering already express."""
    if isinstance(c, Interval | Tie):
        return True
    return isinstance(c, Ball) and c.norm == "linf" and isinstance(c.center, Row)


def _order_key(query: Query, space, combination: Combination) -> float:
    """Sort key: best objective first; for distances, the box's distance to the center."""
    goal = query.goal
    if goal_terms(goal):
        value = goal_value(goal, combination.margins)
        return -value if maximizes(goal) else value
    if isinstance(goal, MinimizeDistance):
        return _box_distance(query, space, combination, goal)
    return 0.0


def _box_distance(query: Query, space, combination: Combination, goal: MinimizeDistance) -> float:
    """A lower bound on the goal's distance over the box (exact when nothing else constrains)."""
    lo, hi = combination.lo, combination.hi
    a = query.instances.index(goal.instance)
    gaps = []
    for f in range(query.n_features):
        va = space.var[a, f]
        if isinstance(goal.center, Row):
            low, high = goal.center.values[f], goal.center.values[f]
        else:
            vb = space.var[query.instances.index(goal.center), f]
            low, high = lo[vb], hi[vb]
        gaps.append(
            max(_gap(lo[va], high), _gap(low, hi[va])) * Fraction(weight_of(goal.weights, f))
        )
    if goal.norm == "linf":
        return float(max(gaps, default=Fraction(0)))
    if goal.norm == "l2":  # rounded as a witness's distance is: a bound on it stays one
        return float(Root(sum((gap * gap for gap in gaps), Fraction(0))))
    return float(sum(gaps, Fraction(0)))


def _gap(a: float, b: float) -> Fraction:
    """``max(0, a - b)`` exactly; infinite ends leave no gap to count."""
    if not (math.isfinite(a) and math.isfinite(b)) or a <= b:
        return Fraction(0)
    return Fraction(a) - Fraction(b)


def _check_outputs(query: Query, inputs, combination: Combination) -> None:
    """The witness must reach the combination's leaves; anything else is a bug in the oracle."""
    outputs, votes = model_outputs(query, inputs), model_votes(query, inputs)
    for pair, margin in combination.margins.items():
        same_votes = np.array_equal(votes[pair], combination.votes[pair])
        if not (np.array_equal(outputs[pair], margin) and same_votes):
            raise AssertionError(
                f"oracle witness reaches other leaves for {pair}: {outputs[pair]} != {margin}"
            )


def _infeasible(query: Query) -> Result:
    bound = infeasible_optimum(query.goal)
    return Result(query.name, OracleEngine.name, Termination.INFEASIBLE, bound, bound)


class _Settled(Exception):
    """The bounds of the combinations tried settle what ``Limits.stop`` asks."""


@dataclass
class _Known:
    """The bounds (and, for a distance, the closest point) the combinations tried so far give."""

    lower: float | None
    upper: float | None
    witness: Witness | None = None
    #: With N solutions asked: the distinct ones found, by leaf combination, best first.
    solutions: dict[tuple, Witness] | None = None
    wanted: int = 1

    def enough(self, query: Query, witness: Witness) -> bool:
        """Whether the solutions found, ``witness`` the last (an objective's), are all that
        was asked: one, or N distinct (:func:`~veritas_dsl.ir.distinct.leaf_combination`)."""
        if self.solutions is None:
            return True
        self.solutions.setdefault(leaf_combination(query, witness.inputs), witness)
        # the first found is the optimum (combinations come best first): both bounds
        self.lower = self.upper = next(iter(self.solutions.values())).value
        return len(self.solutions) == self.wanted

    def hand_over(self, result: Result) -> None:
        """Give ``result`` the solutions found, when N were asked: each was found before any
        worse one, so all are proven in order (a limit may leave fewer than N)."""
        if self.solutions is not None:
            result.witnesses = list(self.solutions.values())
            result.solutions_proven = len(result.witnesses)

    def tighten(self, query: Query, key: float) -> None:
        """Every combination before the one of sort key ``key`` is done: no better one has an
        input (no box has a point closer than the best found or this box's distance)."""
        goal = query.goal
        if self.solutions:  # the optimum is found: what comes after bounds only worse ones
            return
        if maximizes(goal):
            self.upper = min(self.upper, -key)
        elif goal_terms(goal) or isinstance(goal, MinimizeDistance):
            self.lower = max(self.lower, key)


def _unknown(query: Query, termination: Termination, known: _Known) -> Result:
    witnesses = [known.witness] if known.witness is not None else []
    result = Result(query.name, OracleEngine.name, termination, known.lower, known.upper, witnesses)
    known.hand_over(result)
    return result
