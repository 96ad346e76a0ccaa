"""The MILP's time limit and Ctrl-C while its program is built and while HiGHS presolves it.

Issue 37, item 10: on 400 trees of depth 8 the build ran seconds past a limit of 3 s under load,
and Ctrl-C waited 12 to 18 s for HiGHS's presolve. These tests count work instead of timing it:
once the deadline has passed, the builder may finish at most one unit (a tree, a variable's
predicates) before it stops; an interrupt before HiGHS starts means no branch and bound at all.
"""

from __future__ import annotations

import pytest
from test_limits import fairness, random_forest

from veritas_dsl.ir import Maximize, MinimizeDistance, OutputConstraint, Query, Row
from veritas_dsl.result import Termination
from veritas_dsl.solvers.base import Deadline, Limits, OutOfTime
from veritas_dsl.solvers.milp import highs
from veritas_dsl.solvers.milp.engine import MilpEngine
from veritas_dsl.solvers.milp.formulation import formulate
from veritas_dsl.solvers.milp.program import ProgramBuilder

from reference.ir import features, out, term

MODEL = random_forest(60, 6, 10, 0)


def queries() -> dict[str, Query]:
    space = features(MODEL)
    score = term(out(model="m"))
    closest = MinimizeDistance("l1", "x", Row((0.0,) * 10))
    above = (OutputConstraint(score, ">", 1.0),)
    return {
        "fairness": MilpEngine.chain.apply(fairness(MODEL))[0],
        "maximize": Query("max", space, ("x",), {"m": MODEL}, (), Maximize(score)),
        "closest": Query("closest", space, ("x",), {"m": MODEL}, above, closest),
    }


@pytest.fixture
def work(monkeypatch):
    """Columns and rows the builder has written: ``work.count``."""
    counter = type("Work", (), {"count": 0})()
    column, row = ProgramBuilder.column, ProgramBuilder.row

    def counted(method):
        def wrapper(self, *args, **kwargs):
            counter.count += 1
            return method(self, *args, **kwargs)

        return wrapper

    monkeypatch.setattr(ProgramBuilder, "column", counted(column))
    monkeypatch.setattr(ProgramBuilder, "row", counted(row))
    return counter


class PassesAfter(Deadline):
    """A deadline that passes once ``work`` has reached ``units``: no clock involved."""

    def __init__(self, work, units: int) -> None:
        super().__init__(None)
        self.work, self.units = work, units

    def passed(self) -> bool:
        return self.work.count >= self.units

    def remaining(self) -> float | None:
        return -1.0 if self.passed() else None


def one_unit(form) -> int:
    """The most work the builder may do between two looks at the deadline: one tree's leaves
    and rows, or one variable's predicates and their order rows."""
    trees = [len(leaves.nodes) for blocks in form.leaves.values() for leaves in blocks]
    return 3 * max(trees) + 2 * max(len(var.cuts) for var in form.vars)


def test_a_deadline_already_past_stops_the_build_before_any_work(work):
    query = queries()["fairness"]
    with pytest.raises(OutOfTime):
        formulate(query, Deadline(0.0))
    assert work.count == 0


@pytest.mark.parametrize("share", [0.01, 0.1, 0.3, 0.6, 0.9])
def test_a_deadline_passing_while_the_program_is_built_stops_it_within_one_unit(work, share):
    query = queries()["fairness"]
    form = formulate(query)
    total, work.count = work.count, 0
    units = int(share * total)
    with pytest.raises(OutOfTime):
        formulate(query, PassesAfter(work, units))
    assert work.count - units <= one_unit(form), (work.count, units, total)


@pytest.mark.parametrize("name", ["fairness", "maximize", "closest"])
def test_a_limit_passed_before_the_build_is_a_time_limit(work, name):
    """Not an error: the bounds it has (the trivial ones), and no program written."""
    result = MilpEngine("milp", "highs").solve(queries()[name], Limits(timeout_s=0.0))
    assert result.termination is Termination.TIME_LIMIT, result.message
    assert work.count == 0


def test_ctrl_c_while_highs_presolves_sets_its_time_limit_to_zero(monkeypatch):
    """HiGHS calls back only once presolve is over (12 s on 400 trees of depth 8, all that time
    deaf to Ctrl-C), but its presolve reads its time limit: Ctrl-C sets that to 0 (measured:
    Ctrl-C then acts in 0.3 to 0.6 s). Here Ctrl-C comes as HiGHS starts: the limit HiGHS
    runs with is 0, and the result is ``interrupted``, before any branch and bound."""
    form = formulate(queries()["maximize"])
    made, limits = [], []
    silent = highs.silent_highs

    def kept():
        made.append(silent())
        return made[-1]

    def ctrl_c_at_once(work, on_interrupt):
        on_interrupt()
        limits.append(made[-1].getOptionValue("time_limit")[1])  # (status, value)
        return work()

    monkeypatch.setattr(highs, "silent_highs", kept)
    monkeypatch.setattr(highs, "run_interruptible", ctrl_c_at_once)
    outcome = highs.solve(form.program, 60.0)
    assert limits == [0.0]
    assert outcome.status is Termination.INTERRUPTED
    assert outcome.stats["nodes"] == 0
