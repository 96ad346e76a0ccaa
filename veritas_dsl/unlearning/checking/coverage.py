"""What a certificate covers, checked per query: ``worst_case(before, deletions = k)`` and
``best_case`` bound the forests ``DareForest.delete`` of at most ``k`` rows gives, not a forest
fit again (``retrain``). A query that sets such a bound against a model a ``retrain`` separates
from the bound's forest is refused (V422), unless the forest has no random nodes: then a refit
with the same seed is the deleted forest, node for node (the greedy nodes' seeds do not depend on
the rows; tests/model/test_dare_refit.py), and the bound covers it as it covers the deletion.

Why refuse rather than answer: the engines would answer such a query exactly, but its only use
is to check the certificate against an update it does not claim, and with random nodes the
answer is a matter of the refit's fresh draws (bench/recourse.py: certified counterfactuals keep
100 % through ``delete`` and lose up to half through a refit, at deletions the bound covers).
"""

from __future__ import annotations

import dataclasses

from veritas_dsl import names
from veritas_dsl.diagnostics import Span
from veritas_dsl.lang import ast
from veritas_dsl.lang.context import Context, Failed

#: The certified bounds (unlearning/checking/derived.py makes them).
CERTIFICATES = names.CERTIFICATES


class Coverage:
    """Refuses a query that reads a certified bound and a refit it does not cover."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def certificate_coverage(self, decl: ast.QueryDecl) -> None:
        """Raise (V422, at the model's first use in ``decl``) when ``decl`` reads a bound and a
        model separated from the bound's forest by a ``retrain``, the forest having random
        nodes."""
        uses: dict[str, tuple[Span, str | None]] = {}
        for name, span, family in _references(decl, self.ctx.models, self.ctx.families):
            uses.setdefault(name, (span, family))
        bounds = [n for n in uses if self.ctx.lineage.get(n, ("",))[0] in CERTIFICATES]
        for bound in bounds:
            base = self.ctx.lineage[bound][1]
            if self.ctx.forests[base].random_depth == 0:
                continue  # a same-seed refit is the deleted forest (module docstring)
            for other in uses:
                if other == bound:
                    continue
                refit = self.refit_between(base, self._forest_of(other))
                if refit is not None:
                    raise self.uncovered(bound, other, refit, *uses[other])

    def _forest_of(self, name: str) -> str:
        """The forest a model stands for here: a bound's base, else the model itself."""
        func, base = self.ctx.lineage.get(name, ("", ""))
        return base if func in CERTIFICATES else name

    def _chain(self, name: str) -> list[str]:
        """``name``, the model it was made from, and so on to a model read from a file."""
        chain = [name]
        while chain[-1] in self.ctx.lineage:
            chain.append(self.ctx.lineage[chain[-1]][1])
        return chain

    def refit_between(self, a: str, b: str) -> str | None:
        """A ``retrain`` on the way from ``a`` or ``b`` to the last model both were made from
        (None if there is none, or if they share no origin)."""
        chain_a, chain_b = self._chain(a), self._chain(b)
        common = next((n for n in chain_a if n in chain_b), None)
        if common is None:
            return None
        steps = chain_a[: chain_a.index(common)] + chain_b[: chain_b.index(common)]
        return next((n for n in steps if self.ctx.lineage[n][0] == "retrain"), None)

    def uncovered(self, bound: str, other: str, refit: str, span: Span, family) -> Failed:
        """The error for ``bound`` set against ``other`` (read at ``span``, as a model of
        ``family`` or by name), ``refit`` between their forests."""
        func, base = self.ctx.lineage[bound]
        made = self._chain(self._forest_of(other))
        if refit == other:
            relation = f"`{other}` is fit again (`retrain`)"
        elif refit in made:
            relation = f"`{other}` is made from `{refit}`, a refit (`retrain`)"
        elif refit == base:
            relation = f"`{base}` is itself a refit (`retrain`)"
        else:
            relation = f"`{base}` is made from `{refit}`, a refit (`retrain`)"
        return self.ctx.error(
            "V422",
            f"`{bound}` does not bound `{other}`: `{func}` covers `delete` of up to "
            f"{self.ctx.certified_rows[bound]} row(s) of `{base}`, and {relation}",
            span,
            f"`{family}` holds `{other}`, " * (family is not None) + f"not covered by `{bound}`",
            help=f"compare with `delete({base}, rows = ...)`, which it covers",
            notes=[
                f"`{refit}` is declared at {self.ctx.declared[refit]}: a fit draws the random "
                f"nodes (the top {self.ctx.forests[base].random_depth} level(s)) afresh, so it is "
                "another forest, of which the certificate says nothing",
                f"`{bound}` is declared at {self.ctx.declared[bound]}",
            ],
        )


def _references(node, models, families):
    """``(model, span, family)`` for every model ``node`` reads, in source order: a call or a
    name of a model (``family`` None), and every model of a family a ``for m in V`` ranges over
    (at ``V``; ``m`` is no model's name)."""
    if isinstance(node, ast.ForEach | ast.EachOf):
        name = node.family
        yield from ((m, name.span, name.id) for m in families.get(name.id, ()))
    if isinstance(node, ast.Call) and node.func in models:
        yield node.func, node.func_span, None
    if isinstance(node, ast.Name) and node.id in models:
        yield node.id, node.span, None
    if isinstance(node, tuple):
        for item in node:
            yield from _references(item, models, families)
    elif dataclasses.is_dataclass(node) and not isinstance(node, Span):
        for field in dataclasses.fields(node):
            yield from _references(getattr(node, field.name), models, families)
