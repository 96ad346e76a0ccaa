"""Trees of the same shape are searched once by A* (``solvers/astar/sharing.py``) and get one
leaf block in the MILP (``solvers/milp/trees.py``): the variants of a deletion family share the
trees the deletion did not move, and the answer is the same."""

from __future__ import annotations

import itertools

import numpy as np

from veritas_dsl import parse
from veritas_dsl.ir import OutputAtom, OutputTerm
from veritas_dsl.ir.reductions.cancel import shape_keys
from veritas_dsl.solvers.astar import kernels as K
from veritas_dsl.solvers.astar.engine import AStarEngine
from veritas_dsl.solvers.astar.problem import Plan, build_problem
from veritas_dsl.solvers.astar.sharing import SHARED, share_trees
from veritas_dsl.solvers.astar.terms import plan_terms, term_copies
from veritas_dsl.solvers.base import Limits
from veritas_dsl.solvers.milp.engine import MilpEngine
from veritas_dsl.solvers.milp.formulation import formulate
from veritas_dsl.unlearning import DareForest

#: Every input: the spec declares the features whole numbers 0..4.
CELLS = np.array(list(itertools.product(range(5), repeat=3)), np.float32)


def family_query(tmp_path, body: str, count: int = 4):
    rng = np.random.default_rng(0)
    X = rng.integers(0, 5, (80, 3)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] + rng.integers(0, 2, 80) > 4).astype(int)
    DareForest(n_trees=3, max_depth=3, random_state=1).fit(X, y).save(tmp_path / "forest.dare")
    path = tmp_path / "spec.ver"
    path.write_text(
        'model before = dare "forest.dare"\n'
        f"models V = deletions(before, fraction = 0.05, count = {count}, seed = 0)\n"
        "features {\n f0 : int in [0, 4]\n f1 : int in [0, 4]\n f2 : int in [0, 4]\n}\n"
        f"query q {{\n input x\n {body}\n}}\n"
    )
    (lowered,) = parse(path.read_text(), str(path)).lowered()
    return lowered.query


def shapes(query, names) -> set[bytes]:
    return {key for name in names for key in shape_keys(query.models[name])}


def test_a_family_conjunction_searches_each_shape_once_and_answers_as_the_oracle(tmp_path):
    query = family_query(tmp_path, "where class(m, x) == 1 for m in V\n maximize before(x)")
    names = ["before"] + [f"V[{k}]" for k in range(4)]
    distinct = len(shapes(query, names))
    assert distinct < 5 * 3, "the variants share no tree: a weak test"
    reduced, _ = AStarEngine.chain.apply(query)
    problem = build_problem(reduced, Plan(K.MODE_MAXIMIZE, objective=reduced.goal.term))
    # before is read twice (objective, no constraint), each variant once: one search tree a
    # shape, but for single-leaf trees, which hold no search
    assert problem.n_trees <= distinct
    result = AStarEngine().solve(query, Limits(timeout_s=30))
    ok = np.all([query.models[n].eval(CELLS) > 0.5 for n in names[1:]], axis=0)
    expected = query.models["before"].eval(CELLS[ok]).max()
    assert result.lower == result.upper == expected


def test_trees_one_term_reads_together_are_not_merged(tmp_path):
    query = family_query(tmp_path, "find", 1)
    term = OutputTerm((OutputAtom(1.0, "V[0]", "x"), OutputAtom(-1.0, "before", "x")))
    plan = Plan(K.MODE_MAXIMIZE, objective=term)
    terms, signs, _, _ = plan_terms(plan, ())
    copies = term_copies(query, terms, signs)
    searched, same = share_trees(query, copies)
    assert searched is query and same is copies


def test_trees_of_disjoint_terms_are_merged_and_keep_their_values(tmp_path):
    query = family_query(tmp_path, "find", 2)
    term = OutputTerm((OutputAtom(1.0, "V[0]", "x"),))
    plan = Plan(K.MODE_MAXIMIZE, objective=term)
    terms, signs, _, _ = plan_terms(plan, ())
    terms.append(OutputTerm((OutputAtom(1.0, "V[1]", "x"),)))
    signs.append(1.0)
    copies = term_copies(query, terms, signs)
    searched, merged = share_trees(query, copies)
    ((name, instance),) = merged
    assert (name, instance) == (SHARED, "x")
    union = searched.models[SHARED]
    assert union.n_trees == len(shapes(query, ["V[0]", "V[1]"]))
    # at every input, the merged trees add up to each term's trees
    X = CELLS
    leaves = union.leaves(X)
    got = merged[name, instance][leaves].sum(axis=1)
    for k, model in enumerate(("V[0]", "V[1]")):
        m = query.models[model]
        want = m.value[m.leaves(X), 0].sum(axis=1)
        assert np.array_equal(got[:, k], want)


def test_the_milp_gives_each_distinct_tree_one_leaf_block_and_answers_as_astar(tmp_path):
    query = family_query(tmp_path, "where class(m, x) == 1 for m in V\n maximize before(x)")
    names = ["before"] + [f"V[{k}]" for k in range(4)]
    leaves = formulate(query).leaves
    blocks = {id(t.cols) for name in names for t in leaves[name, "x"] if t.cols is not None}
    assert len(blocks) <= len(shapes(query, names)) < 5 * 3
    milp = MilpEngine().solve(query, Limits(timeout_s=30))
    ok = np.all([query.models[n].eval(CELLS) > 0.5 for n in names[1:]], axis=0)
    assert milp.lower == milp.upper == query.models["before"].eval(CELLS[ok]).max()
