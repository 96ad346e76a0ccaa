"""What `ver leakage` compares: pairs of forests, before and after a deletion, taken from a spec
(through the language's own checking, so a bad spec is the error `ver run` gives) or from a saved
forest and the ids to delete (a list ``3,17`` or a file ``@ids.txt``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from veritas_dsl.data import DataError, read_csv, read_row_ids
from veritas_dsl.diagnostics import SPEC_SUFFIX, Diagnostic, Span, SpecError
from veritas_dsl.errors import UserError
from veritas_dsl.ir.query import Feature
from veritas_dsl.spec import load
from veritas_dsl.unlearning.dare import DareForest
from veritas_dsl.unlearning.dare.derive import deleted, id_problems
from veritas_dsl.unlearning.leakage import Leakage, leakage


class TargetError(UserError):
    """The command line asks for a comparison the source cannot give."""


@dataclass(frozen=True)
class Target:
    """One comparison: ``after`` is ``before`` with rows deleted.

    ``model`` and ``base`` name them in a spec (``model`` is None for ``--delete`` on a spec's
    forest; both are None for a saved forest). ``features`` and ``groups`` are the spec's
    feature domains and one-hot groups (None and () for a saved forest: every input).
    """

    model: str | None
    base: str | None
    before: DareForest
    after: DareForest
    features: tuple[Feature, ...] | None = None
    groups: tuple[tuple[int, ...], ...] = ()

    def deleted(self) -> list[int]:
        """The ids of the rows ``after`` forgot and ``before`` holds."""
        return sorted(set(self.before.remaining().tolist()) - set(self.after.remaining().tolist()))

    def leakage(self, engine: str, timeout_s: float | None) -> Leakage:
        """:func:`~veritas_dsl.unlearning.leakage` of the pair, over the spec's domains."""
        return leakage(
            self.before,
            self.after,
            engine=engine,
            timeout_s=timeout_s,
            features=self.features,
            groups=self.groups,
        )


def is_spec(source: str | Path) -> bool:
    """A source with the spec suffix is a spec; anything else is a saved forest."""
    return Path(source).suffix == SPEC_SUFFIX


def targets(
    source: str | Path, delete: str | None, model: str | None = None, trust_pickle: bool = False
) -> list[Target]:
    """The comparisons asked for. ``delete`` is ``"3,17"`` or ``"@ids.txt"`` (a path relative to
    the working folder) or None; ``model`` picks a spec's model. Raises :class:`UserError`
    (a :class:`SpecError`, located, for a bad spec or ids file)."""
    if not is_spec(source):
        if model is not None:
            raise TargetError("--model picks a model of a spec; a saved forest is one model")
        if delete is None:
            raise TargetError("a saved forest needs --delete: the ids of the rows to delete")
        before = DareForest.load(source)
        return [Target(None, None, before, _delete(before, delete))]
    checked = load(source, trust_pickle).checked  # as `ver run` does: the same errors
    domain = _domain(checked.features, tuple(checked.groups.values()), checked.forests)
    if delete is None:
        derived = [n for n, (func, _) in checked.derivations.items() if func == "delete"]
        if not derived:
            raise TargetError(
                f"{source} derives no model with delete(base, rows = ...); "
                "add one, or give --delete IDS to delete from its dare model"
            )
        if model is not None:
            if model not in derived:
                raise TargetError(
                    f"--model {model}: not a delete(...) model of {source}; "
                    f"those are {_names(derived)}"
                )
            derived = [model]
        pairs = [(name, checked.derivations[name][1]) for name in derived]
        return [
            Target(name, base, checked.forests[base], checked.forests[name], *domain)
            for name, base in pairs
        ]
    forests = [n for n in checked.forests if n not in checked.derivations]
    if model is None:
        if len(forests) != 1:
            raise TargetError(
                f"{source} declares {len(forests)} dare models ({_names(forests)}): "
                "say which to delete from with --model NAME"
                if forests
                else f"{source} declares no dare model to delete from"
            )
        model = forests[0]
    elif model not in checked.forests:
        raise TargetError(
            f"--model {model}: not a forest of {source}; those are {_names(list(checked.forests))}"
        )
    before = checked.forests[model]
    return [Target(None, model, before, _delete(before, delete), *domain)]


def _domain(features, groups, forests) -> tuple:
    """The spec's features and one-hot groups in the forests' feature order (the spec's order is
    its first model's, which need not be a forest; every model has the same names)."""
    if not forests:
        return features, groups
    order = list(next(iter(forests.values())).to_ensemble().feature_names)
    index = {f.name: i for i, f in enumerate(features)}
    moved = [order.index(f.name) for f in features]  # the spec's index -> the forests'
    return (
        tuple(features[index[name]] for name in order),
        tuple(tuple(moved[i] for i in group) for group in groups),
    )


def _names(names: list[str]) -> str:
    return ", ".join(names) or "none"


def _delete(forest: DareForest, delete: str) -> DareForest:
    """A copy of ``forest`` without the rows ``delete`` names."""
    if not delete.startswith("@"):
        return deleted(forest, [int(part) for part in delete.split(",")])
    return deleted(forest, file_ids(Path(delete[1:]), forest))


def file_ids(path: Path, forest: DareForest) -> list[int]:
    """The ids in ``path`` (the format of a spec's rows file), each checked against
    ``forest``; every bad one is a located diagnostic."""
    try:
        rows = read_row_ids(path)
    except OSError as error:
        raise TargetError(f"cannot read the ids file {path}: {error.strerror or error}") from None
    except DataError as error:
        span = Span(error.path, error.line, error.column, error.line, error.column + error.width)
        raise SpecError([Diagnostic("V408", error.message, span, help=error.help)]) from None
    spans = [Span(str(path), r.line, r.column, r.line, r.column + r.width) for r in rows]
    problems = []
    for k, reason, first in id_problems(forest, [r.value for r in rows]):
        value, span = rows[k].value, spans[k]
        if reason == "range":
            message = f"row {value} does not exist: the forest has rows 0 to {forest.n_rows - 1}"
            problems.append(Diagnostic("V412", message, span, "out of range"))
        elif reason == "twice":
            notes = (f"first listed at {spans[first]}",)
            problems.append(
                Diagnostic("V412", f"row {value} is listed twice", span, "again", notes)
            )
        else:
            message = f"row {value} is already deleted in the forest"
            problems.append(Diagnostic("V412", message, span, "the saved forest forgot it"))
    if not rows:
        problems.append(Diagnostic("V412", "no rows to delete", Span(str(path), 1, 1, 1, 2)))
    if problems:
        raise SpecError(problems)
    return [row.value for row in rows]


def outside_rows(path: Path, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """``ver membership --outside``'s rows and labels: a CSV whose column ``label`` holds 0 or
    1 and whose other columns are the forest's features, in its order. A bad file is a
    located diagnostic (V408)."""
    try:
        data = read_csv("outside", path)
    except OSError as error:
        reason = error.strerror or error
        raise TargetError(f"cannot read the outside rows {path}: {reason}") from None
    except DataError as error:
        span = Span(error.path, error.line, error.column, error.line, error.column + error.width)
        raise SpecError([Diagnostic("V408", error.message, span, help=error.help)]) from None
    header = Span(str(path), 1, 1, 1, 2)
    if "label" not in data.columns:
        message = "no column `label`: name the column of the rows' labels (0 or 1) so"
        raise SpecError([Diagnostic("V408", message, header)])
    label = data.columns.index("label")
    if len(data.columns) - 1 != n_features:
        message = f"{len(data.columns) - 1} feature columns; the forest reads {n_features}"
        raise SpecError([Diagnostic("V408", message, header)])
    y = data.values[:, label]
    bad = np.flatnonzero(~np.isin(y, (0, 1)))
    if len(bad):
        raise TargetError(
            f"{path}: data row {bad[0] + 1} has label {y[bad[0]]:g}; labels must be 0 or 1"
        )
    return np.delete(data.values, label, axis=1), y.astype(np.int8)
