"""Deep nesting is a located error, never a RecursionError; long chains are no nesting at all.

Every walk after the parser (the checker, the lowering, the engines' walks of the IR) recurses on
nesting, so the parser's caller refuses a tree deeper than ``MAX_DEPTH`` first. A spec just under
the limit must still go through every engine with stack to spare.
"""

from __future__ import annotations

from functools import partial

import pytest

from veritas_dsl import SpecError, parse
from veritas_dsl.cli import ExitCode, main
from veritas_dsl.editor.analysis import analyse
from veritas_dsl.editor.cache import CachedFiles
from veritas_dsl.lang.parser import MAX_DEPTH

N = 20_000


@pytest.fixture
def header(tmp_path, two_trees):
    two_trees.save(tmp_path / "m.json")
    return f'model m = ensemble "{tmp_path / "m.json"}"\n'


def refused_at(text: str) -> tuple[int, int]:
    with pytest.raises(SpecError) as caught:
        parse(text, "deep.ver")
    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.code == "V103"
    assert f"more than {MAX_DEPTH} levels" in diagnostic.message
    return diagnostic.span.line, diagnostic.span.column


CASES = {
    "not": ("not " * N + "x.x0 > 1", "not "),
    "neg": ("- " * N + "x.x0 > 1", "- "),
    "neg-paren": ("-(" * N + "x.x0" + ")" * N + " > 1", "-("),
    "not-paren": ("not (" * N + "x.x0 > 1" + ")" * N, "not ("),
}


@pytest.mark.parametrize("case", CASES)
def test_deep_nesting_is_a_located_error(header, case):
    condition, prefix = CASES[case]
    line = "query q { input x  where " + condition + " }"
    where, column = refused_at(header + line)
    assert where == 2
    # The caret is at the first construct beyond the limit, a few levels below the query.
    start = line.index(prefix)
    assert start < column <= start + len(prefix) * MAX_DEPTH
    assert line[column - 1] == prefix[0]


def test_deep_alternation_and_arithmetic_are_located_errors(header):
    cond = "x.x0 > 0"
    for i in range(N // 10):
        cond = f"(x.x1 > {i} or {cond})"
    assert refused_at(header + f"query q {{ input x  where {cond} }}")[0] == 2
    expr = "x.x0"
    for _ in range(N // 10):
        expr = f"2 * ({expr} + 1)"
    assert refused_at(header + f"query q {{ input x  where {expr} > 0 }}")[0] == 2


def test_parentheses_alone_cost_no_depth(header):
    text = header + "query q { input x  where " + "(" * N + "x.x0" + ")" * N + " > 1 }"
    ((query,),) = [[lowered.query for lowered in parse(text).lowered()]]
    assert query.constraints[0].lo > 1


def test_long_chains_are_flat(header):
    n = 3_000  # three times Python's stack limit: a recursive walk would fail
    total = " + ".join(["x.x0"] * n)
    product = " * ".join(["x.x0", *["1"] * n])
    conjunction = " and ".join([f"x.x1 <= {n - i}" for i in range(n)])
    disjunction = " or ".join(["m(x) > 100"] * n + ["x.x0 >= 1"])
    text = header + (
        f"query sum {{ input x  where {total} <= {2 * n}  maximize m(x) }}\n"
        f"query product {{ input x  where {product} >= 3  maximize m(x) }}\n"
        f"query conjunction {{ input x  where {conjunction}  maximize m(x) }}\n"
        f"query disjunction {{ input x  where {disjunction}  maximize m(x) }}\n"
    )
    queries = [lowered.query for lowered in parse(text).lowered()]
    assert queries[0].constraints[0].hi == 2.0  # n * x0 <= 2 n
    assert queries[1].constraints[0].lo == 3.0
    assert len(queries[2].constraints) == n
    assert len(queries[3].constraints[0].alternatives) == n + 1


def _nested(depth: int, kind: str) -> str:
    """A condition nested ``depth`` times: alternation is the deepest structure in the IR."""
    if kind == "alternation":
        cond = "m(x) > 0"
        for i in range(depth):
            cond = f"(m(x) > {i} {'or' if i % 2 else 'and'} {cond})"
        return f"property p {{ forall x: x.x0 >= 1 => {cond} }}"
    expr = "x.x0"
    for _ in range(depth):
        expr = f"({expr} + 1) * 1"
    return f"query q {{ input x  where {expr} >= 2  maximize m(x) }}"


def _deepest(header: str, kind: str) -> int:
    lo, hi = 1, MAX_DEPTH
    while lo < hi:
        mid = (lo + hi + 1) // 2
        try:
            parse(header + _nested(mid, kind))
            lo = mid
        except SpecError:
            hi = mid - 1
    return lo


def _solve(text: str, engine: str):
    return parse(text).run(solver=engine, timeout_s=30)


def _with_stack_used(frames: int, function):
    return function() if frames == 0 else _with_stack_used(frames - 1, function)


@pytest.mark.parametrize("kind", ["alternation", "arithmetic"])
def test_the_deepest_accepted_spec_runs_on_every_engine_with_stack_to_spare(header, kind):
    text = header + _nested(_deepest(header, kind), kind)
    for engine in ("astar", "milp", "sat", "oracle"):
        # 300 frames already on the stack: a caller deep in a framework still has room.
        (run,) = _with_stack_used(300, partial(_solve, text, engine))
        assert run.result.termination.value == "optimal", engine


@pytest.mark.parametrize("case", ["parentheses", "not"])
def test_every_route_answers_deep_nesting_alike(tmp_path, two_trees, capsys, case):
    """`ver run`, `ver check`, `ver fmt` and the editor's analysis accept 20,000 parentheses
    (they cost no depth) and refuse 20,000 `not`s with V103 at one place: the limit is
    `parse_text`'s alone, and no route walks a tree recursively (`ver fmt` and the editor once
    did, on the formatter's tree, which keeps the parentheses: a RecursionError)."""
    two_trees.save(tmp_path / "m.json")
    condition = "(" * N + "x.x0" + ")" * N + " > 1" if case == "parentheses" else CASES["not"][0]
    text = f'model m = ensemble "m.json"\nquery q {{ input x  where {condition}  maximize m(x) }}\n'
    path = tmp_path / "deep.ver"
    path.write_text(text)
    refused = case == "not"
    place = f"{path}:2:{refused_at(text)[1]}" if refused else None
    for command in (["run", "--solver", "oracle"], ["check"], ["fmt", "--check"]):
        code = main([*command, str(path)])
        said = "".join(capsys.readouterr())  # `ver check` reports on stdout
        assert "internal error" not in said, command
        if refused:
            assert code == ExitCode.ERROR and "V103" in said and place in said, command
        else:
            assert code in (ExitCode.OK, ExitCode.FAILED), (command, said)  # fmt: would change
    diagnostics = analyse(text, str(path), CachedFiles()).diagnostics
    assert [(d.code, d.span.line, d.span.column) for d in diagnostics] == (
        [("V103", 2, refused_at(text)[1])] if refused else []
    )
