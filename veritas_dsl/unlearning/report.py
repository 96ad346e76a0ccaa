"""The tables `ver leakage` prints (the anonymity set, then both extremes of the footprint with
their boxes and the training rows, deleted ones among them, each box holds) and `ver
membership` prints (the attack's metrics per unlearning) and `ver cap` prints (the cap and how
it is proven)."""

from __future__ import annotations

import math

from veritas_dsl.report.table import float32_text
from veritas_dsl.unlearning.cap import Cap
from veritas_dsl.unlearning.leakage import Extreme, Leakage
from veritas_dsl.unlearning.membership import Membership

#: Ids of a set shown before "... (n more)".
SHOWN = 20


def render(found: Leakage) -> str:
    """``found`` as text: one line per fact, then the boxes' bounded features."""
    lines = [f"deleted    {_ids(found.deleted)}", *_anonymity(found)]
    lines.append(
        f"footprint  after - before over {found.changed_trees} changed trees (of before and "
        f"after; the rest cancel), engine {found.engine}"
    )
    lines.append(f"  minimum  {_extreme(found.minimum)}")
    lines.append(f"  maximum  {_extreme(found.maximum)}")
    lines.extend(_boxes(found))
    return "\n".join(lines)


def _anonymity(found: Leakage) -> list[str]:
    size, ids = len(found.anonymity), _ids(found.anonymity)
    if not found.reproduced:
        return [
            f"anonymity  unknown: deleting {_ids(found.deleted)} from before does not give after "
            "(made with another random state, or rows were added)"
        ]
    if found.anonymity_exact:
        lines = [f"anonymity  exactly {size} rows, those whose deletion gives after: {ids}"]
    else:
        how = (
            f"tried {found.tried} of {found.candidates} rows"
            if found.tried < found.candidates
            else "each in a deletion differing from this one in one row"
        )
        lines = [f"anonymity  at least {size} rows consistent with the change ({how}): {ids}"]
    if found.unchanged:
        lines.append(
            "reveals    no change: no tree changed, before and after are one; the deleted rows "
            "hide among the rows whose deletion changes no tree"
        )
    elif found.identified:
        lines.append(
            "reveals    everything: no other row is consistent with the change, "
            "so comparing before and after identifies the deleted row"
        )
    return lines


def _extreme(extreme: Extreme) -> str:
    if extreme.proven:
        text = f"{extreme.upper:.6g} (proven)"
    else:
        best = "no input found" if extreme.value is None else f"best found {extreme.value:.6g}"
        text = (
            f"in [{extreme.lower:.6g}, {extreme.upper:.6g}] "
            f"(not proven: {extreme.termination}; {best})"
        )
    if extreme.box is None:
        return text
    return (
        f"{text}; its box holds {len(extreme.rows)} training rows, "
        f"deleted: {_ids(extreme.deleted) or 'none'}"
    )


def _boxes(found: Leakage) -> list[str]:
    """The features either box bounds, the minimum's box then the maximum's."""
    boxes = [e.box for e in (found.minimum, found.maximum)]
    if all(box is None for box in boxes):
        return []
    n = len(next(box for box in boxes if box is not None))
    names = found.features or tuple(f"f{f}" for f in range(n))
    width = max(8, *map(len, names))
    whole = ((-math.inf, math.inf),) * n
    boxes = [box or whole for box in boxes]
    lines = [
        f"  {'feature':<{width}}  {'min: low <=':>14}  {'< high':>14}  "
        f"{'max: low <=':>14}  {'< high':>14}"
    ]
    for f, name in enumerate(names):
        ends = [end for box in boxes for end in box[f]]
        if all(math.isinf(end) for end in ends):
            continue
        lines.append(f"  {name:<{width}}  " + "  ".join(f"{float32_text(e):>14}" for e in ends))
    return lines


def _ids(ids) -> str:
    text = ", ".join(map(str, ids[:SHOWN]))
    if len(ids) > SHOWN:
        text += f", ... ({len(ids) - SHOWN} more)"
    return text


def render_spec(entries: list[tuple[str | None, str, Leakage]]) -> str:
    """Reports for a spec's comparisons, each ``(model, base, found)`` (``model`` None for
    ``--delete`` on ``base``) headed by the models compared, a blank line between them."""
    return "\n\n".join(
        f"models     {base} -> {model or 'its deletion'}\n{render(found)}"
        for model, base, found in entries
    )


def spec_document(entries: list[tuple[str | None, str, Leakage]]) -> dict:
    """A spec's comparisons as one JSON document: ``{"results": [...]}``, a list even of one
    (the shape of ``ver run --json``), each entry ``model`` and ``base`` then the fields of
    :meth:`Leakage.to_dict`."""
    return {
        "results": [
            {"model": model, "base": base, **found.to_dict()} for model, base, found in entries
        ]
    }


def render_membership(found: Membership) -> str:
    """`ver membership`'s table: per unlearning, each metric's mean over the seeds and its 95 %
    interval across them."""
    rows = "row" if len(found.deleted) == 1 else "rows"
    lines = [
        f"deleted     {_ids(found.deleted)} ({len(found.deleted)} {rows} in "
        f"{found.batches} deletion{'s' if found.batches != 1 else ''})",
        f"attacker    {found.shadows} shadow forests a game, {found.seeds} games (seeds); "
        f"outside rows: {found.outside}, half scored, half the attacker's",
        "metric      mean over the games [95 % interval across them]",
    ]
    names = {"auc": "AUC", "priaa": "PriAA", "advantage": "advantage", "probe_auc": "probe AUC"}
    width = max(map(len, found.summary))
    for name, metrics in found.summary.items():
        cells = []
        for metric, e in metrics.items():
            spread = "" if e.low is None else f" [{e.low:.3f}, {e.high:.3f}]"
            cells.append(f"{names[metric]} {e.mean:.3f}{spread}")
        lines.append(f"{name:<{width}}  " + "; ".join(cells))
    return "\n".join(lines)


def render_cap(model: str | None, base: str | None, deleted: list[int], found: Cap) -> str:
    """`ver cap`'s report: the cap, the clip that meets it and how it is proven."""
    how = (
        f"proven by {found.engine} (the maximum, at the point below)"
        if found.proven
        else f"a bound ({found.engine}'s at its limit, or the trees' own)"
        if found.engine
        else "the trees' own bound (no engine ran)"
    )
    lines = [
        *([f"models      {base} -> {model or 'its deletion'}"] if base else []),
        f"deleted     {_ids(tuple(deleted))}",
        f"cap         |after'(x) - before(x)| <= {found.tau:g} on every input asked",
        f"footprint   <= {found.footprint:.6g}, {how}; uncapped <= {found.uncapped:.6g}",
        f"clip        each tree's change within +-{found.clip:.6g} "
        f"({found.changed_trees} trees changed; {found.steps} footprints measured)",
    ]
    if found.noise:
        lines.append(
            f"noise       every leaf moved by seeded noise, {found.noise:g} of tau over all "
            f"trees (seed {found.seed})"
        )
    if found.point is not None:
        lines.append(f"reached     {found.reached:.6g} at {list(found.point)}")
    return "\n".join(lines)
