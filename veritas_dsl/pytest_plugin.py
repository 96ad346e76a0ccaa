"""pytest plugin: ``pytest path/`` collects `.ver` files; each property, and each query with an
``expect``, is one test item named ``file.ver::query``.

A failure shows the check that failed, its bounds, and the counterexample as a table (feature,
value; a column per instance). Enabled by the ``pytest11`` entry point; which files are collected
is the ``ver_files`` ini option (a glob, ``*.ver`` by default).

Models can come from a ``ver_models`` fixture (``{"clf": model}``; the plugin's own gives none),
which a ``conftest.py`` overrides: each spec takes those of its ``model`` declarations' names.
A spec whose models all name files is checked when collected, as ``ver check`` would; one with
a model declared without a file is checked by its first test, once the fixture has its models.
"""

from __future__ import annotations

import fnmatch

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("ver_files", "glob of the .ver files to collect as tests", default="*.ver")
    group = parser.getgroup("veritas-dsl")
    group.addoption("--ver-solver", help="engine for every .ver query (overrides `solve with`)")
    group.addoption("--ver-timeout", type=float, help="time limit per engine and .ver query")
    group.addoption(
        "--ver-trust-pickle",
        action="store_true",
        help="allow scikit-learn pickle/joblib models, which runs code from the file",
    )


def pytest_configure(config: pytest.Config) -> None:
    solver = config.getoption("ver_solver", None)
    if not solver:
        return  # a session without .ver options imports nothing of ours (the registry: NumPy)
    from veritas_dsl.solvers import registry

    if solver not in registry.ENGINES:
        raise pytest.UsageError(
            f"--ver-solver: unknown engine {solver!r} "
            f"(choose from {', '.join(sorted(registry.ENGINES))})"
        )


def pytest_collect_file(file_path, parent):
    if file_path.suffix == ".ver" and fnmatch.fnmatch(
        file_path.name, parent.config.getini("ver_files")
    ):
        return VerFile.from_parent(parent, path=file_path)
    return None


class CheckFailed(Exception):
    """Some checks of a query did not hold; carries the report text."""


class VerWarning(UserWarning):
    """A spec's warning (``warning[V6xx]``), shown in pytest's warnings summary."""


@pytest.fixture
def ver_models() -> dict:
    """Models given to the `.ver` files' ``model`` declarations, by name: none. Define a
    ``ver_models`` fixture in a ``conftest.py`` to give some (docs/testing.md)."""
    return {}


class VerFile(pytest.File):
    def collect(self):
        from veritas_dsl import SpecError
        from veritas_dsl.lang import ast
        from veritas_dsl.lang.parser import parse_text
        from veritas_dsl.spec import decode, read_spec

        self.given: dict[tuple, tuple] = {}  # specs checked with given models; see spec_for
        try:
            text = decode(read_spec(self.path), str(self.path))
            parsed = parse_text(text, str(self.path))
            declared = [i for i in parsed.items if isinstance(i, ast.ModelDecl)]
            self.declared = {d.name for d in declared}
            self.text, self.parsed, self.collected = text, parsed, None
            if all(d.path is not None for d in declared):
                self.collected = self.load({})
        except SpecError as error:
            yield SpecErrorItem.from_parent(self, name="spec", error=error)
            return
        for query in parsed.items:
            if isinstance(query, ast.QueryDecl) and (
                query.is_property or any(isinstance(s, ast.Expect) for s in query.body)
            ):
                yield VerItem.from_parent(self, name=query.name, query_span=query.span)

    def load(self, models: dict):
        from veritas_dsl.model.load import pickle_option
        from veritas_dsl.spec import Spec

        with pickle_option("--ver-trust-pickle"):
            trust = self.config.getoption("ver_trust_pickle")
            return Spec(self.text, str(self.path), trust, parsed=self.parsed, models=models)

    def spec_for(self, given: dict):
        """The spec with the models ``given`` by ``ver_models`` that it declares: checked
        once per file and set of models (raises its :class:`SpecError` each time)."""
        from veritas_dsl import SpecError

        models = {name: model for name, model in given.items() if name in self.declared}
        if not models and self.collected is not None:
            return self.collected
        key = tuple(sorted((name, id(model)) for name, model in models.items()))
        if key not in self.given:
            try:
                self.given[key] = (models, self.load(models))  # models kept: their ids stay
            except SpecError as error:
                self.given[key] = (models, error)
        spec = self.given[key][1]
        if isinstance(spec, SpecError):
            raise spec
        return spec


class SpecErrorItem(pytest.Item):
    """Stands for a spec that does not check, so that its diagnostics show as a failure."""

    def __init__(self, *, error, **kwargs) -> None:
        super().__init__(**kwargs)
        self.error = error

    def runtest(self) -> None:
        raise self.error

    def repr_failure(self, excinfo, style=None):
        from veritas_dsl.diagnostics import render

        return "\n\n".join(render(d) for d in self.error.diagnostics)

    def reportinfo(self):
        return self.path, 0, f"{self.path.name}: spec errors"


def _checked(ver_models) -> None:
    """What a `.ver` item runs stands for this function, whose argument makes pytest set up
    the ``ver_models`` fixture for it."""


class VerItem(pytest.Function):
    """One property or query with expectations (all rows of a batch)."""

    def __init__(self, *, query_span, **kwargs) -> None:
        super().__init__(callobj=_checked, **kwargs)
        self.query_span = query_span

    def runtest(self) -> None:
        self.spec = self.parent.spec_for(self.funcargs["ver_models"])
        self.query = next(q for q in self.spec.queries if q.name == self.name)
        self.check()

    def check(self) -> None:
        from veritas_dsl.diagnostics import render
        from veritas_dsl.lang.lower import lower, origin
        from veritas_dsl.parallel import run_all
        from veritas_dsl.run import RunOptions, preflight
        from veritas_dsl.vacuity import empty_filters, warnings

        options = RunOptions(
            self.config.getoption("ver_solver"), self.config.getoption("ver_timeout")
        )
        lowered = lower(self.spec.checked, self.query)
        for warning in warnings(lowered) + empty_filters([origin(self.query)], lowered):
            self.warn(VerWarning(render(warning, self.spec.sources)))
        # As Spec.run: every engine choice checked before any row runs; Ctrl-C (Interrupted,
        # a KeyboardInterrupt) stops the session, as for any test.
        plans = preflight(lowered, options)
        runs = run_all(lowered, options, jobs=1, plans=plans)
        failed = [run for run in runs if run.failed]
        if failed:
            raise CheckFailed(self.describe(failed, len(runs)))

    def describe(self, failed, total: int) -> str:
        from veritas_dsl.report.table import bounds_text, failure_text, witness_table

        lines = []
        if total > 1:
            lines.append(f"{len(failed)} of {total} rows fail")
        for run in failed:
            result = run.result
            for check in run.checks:
                if check.holds is True:
                    continue
                verdict = check.verdict.value
                lines.append(f"{check.span}: {run.name}: {check.text} {verdict} ({check.detail})")
            answer = result.termination.value
            if run.kind not in ("find", "prove") and not failure_text(result):
                answer += f", {bounds_text(result)}"
            lines.append(f"  engine {result.engine}: {answer}")
            lines += [f"  {r.engine}: {r.message}" for r in run.results if r.message]
            if result.witnesses:
                label = "counterexample" if run.kind == "prove" else "witness"
                table = witness_table(
                    run.lowered.query, result.witnesses[0], self.spec.reference_row(run)
                )
                lines.append(f"  {label}:")
                lines += ["    " + row for row in table.splitlines()]
        return "\n".join(lines)

    def repr_failure(self, excinfo, style=None):
        from veritas_dsl.diagnostics import SpecError, render

        if isinstance(excinfo.value, CheckFailed):
            return str(excinfo.value)
        if isinstance(excinfo.value, SpecError):
            return "\n\n".join(render(d) for d in excinfo.value.diagnostics)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, self.query_span.line - 1, self.name
