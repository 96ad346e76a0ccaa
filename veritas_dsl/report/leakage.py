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
        f"  {'feature':<8}  {'low <=':>14}  {'< high':>14}",
    ]
    for f, (low, high) in enumerate(found.box):
        if not (math.isinf(low) and math.isinf(high)):
            bounds = f"{float32_text(low):>14}  {float32_text(high):>14}"
            lines.append(f"  {'f' + str(f):<8}  {bounds}")
    return "\n".join(lines)
