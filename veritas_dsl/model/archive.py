"""How far a model archive (a zip: ``.skops``, ``.dare``) may inflate when it is read.

A zip member records the size it inflates to, and a reader gets no more than that. A few
kilobytes of compressed zeros can record gigabytes, and skops reads a member again for every node
that names it, so a file of 700 bytes once asked for 16 GB before any check ran. Model arrays
compress little (skops stores them uncompressed by default), so an archive may inflate to a
hundred times its size, and to 256 MiB whatever its size.
"""

from __future__ import annotations

from veritas_dsl.model.errors import ModelError

RATIO = 100
FLOOR = 256 << 20


def check_inflation(inflated: int, size: int) -> None:
    """Refuse an archive of ``size`` bytes whose reading inflates to ``inflated`` bytes."""
    if inflated > max(FLOOR, RATIO * size):
        raise ModelError(
            f"reading it would inflate its {size:,} bytes to {inflated:,}; no model packs this "
            "tightly"
        )
