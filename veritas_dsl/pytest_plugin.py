"""pytest plugin: ``pytest path/`` collects `.ver` files; each property, and each query with an
``expect``, is one test item named ``file.ver::query``.

A failure shows the check that failed, its bounds, and the counterexample as a table (feature,
value; a column per instance). Enabled by the ``pytest11`` entry point; which files are collected
is the ``ver_files`` ini option (a glob, ``*.ver`` by default).
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


class VerFile(pytest.File):
    def collect(self):
        from veritas_dsl import SpecError, load
        from veritas_dsl.model.load import pickle_option

        try:
            with pickle_option("--ver-trust-pickle"):
                spec = load(self.path, self.config.getoption("ver_trust_pickle"))
        except SpecError as error:
            yield SpecErrorItem.from_parent(self, name="spec", error=error)
            return
        for query in spec.queries:
            if query.is_property or query.expectations:
                yield VerItem.from_parent(self, name=query.name, spec=spec, query=query)


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


class VerItem(pytest.Item):
    """One property or query with expectations (all rows of a batch)."""

    def __init__(self, *, spec, query, **kwargs) -> None:
        super().__init__(**kwargs)
        self.spec = spec
        self.query = query

    def runtest(self) -> None:
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
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, self.query.span.line - 1, self.name
