"""The checker is small checkers sharing one context, run as steps: the models are loaded and
derived before anything is typed, so a spec's typing errors cannot change which models load,
and the loading step can run (and be tested) alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from veritas_dsl import SpecError, load
from veritas_dsl.lang import check
from veritas_dsl.lang.context import Context
from veritas_dsl.lang.environment import Environment
from veritas_dsl.lang.expressions import Expressions
from veritas_dsl.lang.models import Models
from veritas_dsl.lang.parser import parse_text
from veritas_dsl.lang.quantifiers import Quantifiers
from veritas_dsl.lang.queries import Queries
from veritas_dsl.lang.scales import Scales
from veritas_dsl.unlearning.checking.coverage import Coverage
from veritas_dsl.unlearning.checking.derived import DerivedModels
from veritas_dsl.unlearning.checking.families import Families

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

CHECKERS = [
    Context,
    Models,
    DerivedModels,
    Families,
    Environment,
    Expressions,
    Scales,
    Quantifiers,
    Queries,
    Coverage,
]


@pytest.mark.parametrize("checker", CHECKERS, ids=lambda c: c.__name__)
def test_each_checker_is_composed_not_inherited(checker):
    # Every checker is handed the context (and the checkers it uses); none is a layer of a
    # chain of base classes, which is what made the old checker one object of nine classes.
    assert checker.__bases__ == (object,)


def test_the_models_are_loaded_and_derived_before_any_typing():
    spec = parse_text(
        f'model before = dare "{EXAMPLES / "models/unlearning.dare"}"\n'
        "model after = delete(before, rows = [3])\n"
        "models V = deletions(before, fraction = 0.05, count = 2, seed = 0)\n"
        "query q {\n  input x\n  maximize after(x) + nonsense\n}\n"
    )
    ctx = Context(spec, ("astar",), trust_pickle=False)
    Models(ctx, Expressions(ctx)).load(spec.items)
    assert not ctx.diagnostics  # the query's unknown name is the next steps' business
    assert set(ctx.forests) == {"before", "after"}
    assert ctx.families["V"] == ("before", "V[0]", "V[1]")
    assert {"before", "after", "V[0]", "V[1]"} <= set(ctx.models)
    assert ctx.features  # the feature space the models share


def test_a_typing_error_is_reported_after_every_model_loaded():
    spec = parse_text(
        f'model before = dare "{EXAMPLES / "models/unlearning.dare"}"\n'
        "query q {\n  input x\n  maximize before(x) + nonsense\n}\n"
        "model after = delete(before, rows = [3, 3])\n"
    )
    with pytest.raises(SpecError) as raised:
        check.check(spec, ("astar",))
    # The model declared after the query is checked first: its error comes first.
    assert [d.code for d in raised.value.diagnostics] == ["V412", "V213"]


def test_every_example_checks_the_same_through_the_steps():
    for path in sorted(EXAMPLES.glob("*.ver")):
        spec = load(path)
        assert spec.checked.queries, path
