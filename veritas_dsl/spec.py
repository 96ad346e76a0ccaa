"""A `.ver` spec as a Python object: ``veritas_dsl.load(path)`` or ``veritas_dsl.parse(text)``,
then ``.run()``."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from veritas_dsl import vacuity
from veritas_dsl.diagnostics import Diagnostic, Sources, Span, SpecError
from veritas_dsl.inputs import read_bytes
from veritas_dsl.ir.lowered import Lowered
from veritas_dsl.lang import ast, typed
from veritas_dsl.lang.check import check
from veritas_dsl.lang.files import Files
from veritas_dsl.lang.lower import lower, origin
from veritas_dsl.lang.parser import parse_text
from veritas_dsl.outcome import FileOutcome, Interrupted, QueryRun
from veritas_dsl.parallel import run_all
from veritas_dsl.run import RunOptions, preflight
from veritas_dsl.solvers import registry

if TYPE_CHECKING:
    from veritas_dsl.cluster import Connection

#: The largest spec file: people write specs, and generated ones of 100,000 queries stay under
#: 10 MB; a device or a sparse file named as a spec is refused before it is read.
MAX_SPEC_BYTES = 64 * 2**20


class Spec:
    """A checked spec: its models and data are loaded, every query typed.

    Raises :class:`SpecError` (with located diagnostics) when the spec is wrong. ``files``
    (a :class:`veritas_dsl.lang.files.Files`) reads its models and data; directly when None.
    ``parsed`` is ``parse_text(text, path)`` when the caller has it already (the editor).
    ``models`` gives models as Python objects by declared name (``{"clf": booster}``), in place
    of the files the declarations name (see :mod:`veritas_dsl.model.in_memory`).
    """

    def __init__(
        self,
        text: str,
        path: str = "<string>",
        trust_pickle: bool = False,
        files=None,
        parsed: ast.SpecFile | None = None,
        models: Mapping[str, object] | None = None,
    ) -> None:
        _check_models(models)
        self.path = path
        self.text = text
        self.trust_pickle = trust_pickle
        self.sources = Sources({path: text})
        if parsed is None:
            parsed = parse_text(text, path)
        files = files if files is not None else Files()
        self.checked: typed.CheckedSpec = check(
            parsed, registry.ENGINES, trust_pickle, files, models
        )
        self._digest = self._hash_files(files.sha256)  # now: the files as they were loaded

    @property
    def queries(self) -> tuple[typed.CheckedQuery, ...]:
        return self.checked.queries

    def lowered(self, checks_only: bool = False) -> Iterator[Lowered]:
        """Every IR query of the spec, in order (batch queries row by row); with
        ``checks_only``, only properties and queries with an ``expect``."""
        for query in self._selected(checks_only):
            yield from lower(self.checked, query)

    def _selected(self, checks_only: bool) -> list[typed.CheckedQuery]:
        queries = self.checked.queries
        return [q for q in queries if not checks_only or q.is_property or q.expectations]

    def warnings(self, checks_only: bool = False) -> list[Diagnostic]:
        """Located warnings about the queries :meth:`lowered` gives, found before any engine
        runs: conditions no input satisfies, row filters that keep no row (see
        :mod:`veritas_dsl.vacuity`); and those of the checker (a scale's statistic of 0)."""
        lowered = list(self.lowered(checks_only))
        return (
            list(self.checked.warnings)
            + vacuity.warnings(lowered)
            + vacuity.empty_filters(map(origin, self._selected(checks_only)), lowered)
        )

    def run(
        self,
        solver: str | None = None,
        timeout_s: float | None = None,
        progress=None,
        checks_only: bool = False,
        jobs: int = 1,
        done=None,
        skip: frozenset[tuple[str, int | None]] = frozenset(),
        scheduler: str | Connection | None = None,
        to_optimum: bool | None = None,
    ) -> list[QueryRun]:
        """Solve every query (or only the checks) and judge expectations; see :class:`QueryRun`.

        ``solver`` overrides every query's engines; a query it cannot take gets an
        ``unsupported`` Result and the others run. ``jobs`` processes share the work when there
        is enough of it (see :mod:`veritas_dsl.parallel`); ``done(run, finished, total)`` reports
        each finished run. ``skip`` names ``(query, row)`` pairs not to run (those an earlier
        run answered). ``scheduler`` runs every query on a Dask cluster instead
        (:mod:`veritas_dsl.cluster`): a scheduler's address, ``local:N``, or a
        :class:`~veritas_dsl.cluster.Connection` that several runs share. With
        ``checks_only`` an engine stops once its bounds settle every ``expect`` of a query
        (termination ``decided``); ``to_optimum`` says otherwise (default: solve to the optimum
        when every query is run, for its answer, and stop when only the checks are).

        Raises :class:`SpecError` before anything runs when an engine choice cannot work, and
        :class:`~veritas_dsl.outcome.Interrupted` (a ``KeyboardInterrupt``) on Ctrl-C, whose
        ``partial`` holds the runs finished so far, the interrupted one last.
        """
        if to_optimum is None:
            to_optimum = not checks_only
        options = RunOptions(solver, timeout_s, progress, to_optimum)
        lowered = _without(self.lowered(checks_only), skip)
        plans = preflight(lowered, options)
        if scheduler is None:
            return run_all(lowered, options, jobs, done, plans=plans)
        from veritas_dsl.cluster import DaskPool, connected

        plain = RunOptions(solver, timeout_s)  # callbacks stay here
        with connected(scheduler) as connection:
            pool = functools.partial(DaskPool, connection, plain)
            return run_all(lowered, options, jobs, done, pool=pool, plans=plans)

    def digest(self) -> str:
        """SHA-256 of the spec's text and of the bytes of every model and data file it loaded
        (read just after loading them), and of what it read of each model given as an object
        (:func:`veritas_dsl.model.in_memory.digest`): two specs with the same digest answer the
        same queries on the same inputs."""
        return self._digest

    def _hash_files(self, read: dict[str, bytes]) -> str:
        """``read``: the SHA-256 of the bytes of model files, by path, as they were loaded; the
        other files are read here."""
        hashed = hashlib.sha256(b"veritas-dsl spec\0" + self.text.encode())
        files = [("model", n, p) for n, p in sorted(self.checked.model_paths.items())]
        files += [("data", n, d.path) for n, d in sorted(self.checked.datasets.items())]
        for kind, name, path in files:
            hashed.update(f"\0{kind}\0{name}\0".encode())
            sha256 = read.get(str(path)) if kind == "model" else None
            hashed.update(sha256 or hashlib.sha256(Path(path).read_bytes()).digest())
        for name, sha256 in sorted(self.checked.model_digests.items()):
            hashed.update(f"\0given\0{name}\0".encode() + sha256)
        return hashed.hexdigest()

    def reference_row(self, run: QueryRun) -> dict[str, float] | None:
        """The batch row a run was made for, by feature name (None outside batches)."""
        batch = run.lowered.origin.batch
        if batch is None:
            return None
        row = self.checked.row(batch.data, run.lowered.row)
        return {f.name: v for f, v in zip(self.checked.features, row.values, strict=True)}


def spec_files(paths: list[str], suffixes: tuple[str, ...] = (".ver",)) -> list[Path]:
    """The files named, and the files with one of ``suffixes`` under the folders named, in
    order. Raises :class:`SpecError` (V001) for a path that does not exist."""
    files = []
    for name in paths:
        path = Path(name)
        if path.is_dir():
            found = (p for p in path.rglob("*") if p.suffix.lower() in suffixes and p.is_file())
            files += sorted(found)
        elif path.exists():
            files.append(path)
        else:
            raise SpecError([Diagnostic("V001", f"{path}: no such file or folder")])
    return files


def load(
    path: str | Path, trust_pickle: bool = False, models: Mapping[str, object] | None = None
) -> Spec:
    """Read, parse and check the spec at ``path``; paths inside it are relative to its folder.
    ``models``: models given as objects by declared name (see :class:`Spec`)."""
    path = Path(path)
    return Spec(decode(read_spec(path), str(path)), str(path), trust_pickle, models=models)


def read_spec(path: Path) -> bytes:
    """The bytes of the spec file at ``path``; a path that is not a regular file, or a file
    over :data:`MAX_SPEC_BYTES`, is refused (V001) before it is read."""
    try:
        return read_bytes(path, MAX_SPEC_BYTES, "a spec file")
    except OSError as error:
        raise SpecError(
            [Diagnostic("V001", f"cannot read {path}: {error.strerror or error}")]
        ) from None


def decode(data: bytes, path: str) -> str:
    """The text of a spec file: UTF-8 (a byte-order mark is skipped), newlines as ``\\n``; a byte
    that is not UTF-8 is an error at its line and column."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        before = _universal_newlines(data[: error.start].decode("utf-8-sig"))
        line = before.count("\n") + 1
        column = len(before) - before.rfind("\n")
        span = Span(path, line, column, line, column + 1)
        raise SpecError(
            [
                Diagnostic(
                    "V001",
                    f"cannot read {path}: it is not UTF-8 text",
                    span,
                    f"byte 0x{data[error.start]:02x} is not UTF-8",
                    help="save the file as UTF-8",
                )
            ]
        ) from None
    return _universal_newlines(text)


def _universal_newlines(text: str) -> str:
    # As Path.read_text does: Windows and old Mac line ends count as one line end.
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _without(lowered, skip) -> list[Lowered]:
    return [item for item in lowered if (item.origin.name, item.row) not in skip]


def parse(
    text: str,
    path: str = "<string>",
    trust_pickle: bool = False,
    models: Mapping[str, object] | None = None,
) -> Spec:
    """Parse and check spec text; ``path`` names it in messages and anchors relative paths.
    ``models``: models given as objects by declared name (see :class:`Spec`)."""
    return Spec(text, path, trust_pickle, models=models)


def _check_models(models: object) -> None:
    # A wrong container is a programming error (TypeError), as for any Python argument; a wrong
    # model in it is the spec's error, located at its declaration.
    if models is None:
        return
    if not isinstance(models, Mapping):
        raise TypeError(f"models must be a mapping of model names to models, not {models!r}")
    odd = [name for name in models if not isinstance(name, str)]
    if odd:
        raise TypeError(f"models: a model's name is a string, not {odd[0]!r}")


def check_file(
    path: str | Path,
    solver: str | None = None,
    timeout_s: float | None = None,
    trust_pickle: bool = False,
    jobs: int = 1,
    warn: Callable[[Diagnostic], None] | None = None,
    scheduler: str | Connection | None = None,
    to_optimum: bool = False,
):
    """Run the checks of one spec file; spec errors are returned, not raised. ``warn`` sees
    each warning before anything runs (they are kept in the outcome too). After Ctrl-C,
    ``outcome.interrupted`` is set and ``outcome.runs`` holds the runs finished so far.
    ``scheduler`` and ``to_optimum``: see :meth:`Spec.run`."""
    outcome = FileOutcome(str(path))
    try:
        spec = load(path, trust_pickle)
        outcome.warnings = tuple(spec.warnings(checks_only=True))
        for warning in outcome.warnings if warn else ():
            warn(warning)
        outcome.runs = spec.run(
            solver,
            timeout_s,
            checks_only=True,
            jobs=jobs,
            scheduler=scheduler,
            to_optimum=to_optimum,
        )
    except SpecError as error:
        outcome.errors = error.diagnostics
        return outcome
    except Interrupted as stop:
        outcome.runs = stop.partial
        outcome.interrupted = True
    for index, run in enumerate(outcome.runs):
        row = spec.reference_row(run)
        if row is not None:
            outcome.reference_rows[index] = row
    return outcome
