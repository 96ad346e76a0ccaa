"""The table `ver leakage` prints: the footprint's extremes, the box and its anonymity set."""

from __future__ import annotations

import math

from veritas_dsl.report.table import float32_text
from veritas_dsl.unlearning import Leakage

#: Ids of the anonymity set shown before "... (n more)".
SHOWN = 20


def render(found: Leakage) -> str:
    """``found`` as text: one line per fact, then the box's bounded features."""
    extreme = found.minimum if found.direction == "min" else found.maximum
    ids = ", ".join(map(str, found.anonymity[:SHOWN]))
    if len(found.anonymity) > SHOWN:
        ids += f", ... ({len(found.anonymity) - SHOWN} more)"
    lines = [
        f"deleted    {', '.join(map(str, found.deleted))}",
        f"footprint  after - before in [{found.minimum:.6g}, {found.maximum:.6g}] ({found.engine})",
        f"extreme    {found.direction} {extreme:.6g}, over {found.changed_trees} changed trees",
        f"anonymity  {len(found.anonymity)} training rows in the box: {ids or 'none'}",
    ]
    names = found.features or tuple(f"f{f}" for f in range(len(found.box)))
    width = max(8, *map(len, names))
    lines.append(f"  {'feature':<{width}}  {'low <=':>14}  {'< high':>14}")
    for name, (low, high) in zip(names, found.box, strict=True):
        if not (math.isinf(low) and math.isinf(high)):
            bounds = f"{float32_text(low):>14}  {float32_text(high):>14}"
            lines.append(f"  {name:<{width}}  {bounds}")
    return "\n".join(lines)


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
