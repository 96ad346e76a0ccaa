"""The text of the live progress line of ``ver run`` and ``ver check`` on a terminal.

For a batch: rows done of the total, the last one finished, rows per second, the time left at
that pace, and the checks that hold, fail and are undecided so far; while an engine works, its
bounds follow.
"""

from __future__ import annotations

import time

from veritas_dsl.outcome import QueryRun


class Line:
    """The progress of one run, fed each finished query."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.bar = ""
        self.verdicts = {"holds": 0, "failed": 0, "undecided": 0}

    def done(self, run: QueryRun, finished: int, total: int) -> bool:
        """Count ``run``; whether there is a batch bar to show (more than one query)."""
        for check in run.checks:
            self.verdicts[{True: "holds", None: "undecided"}.get(check.holds, "failed")] += 1
        if total <= 1:
            return False
        rate = finished / max(time.monotonic() - self.start, 1e-9)
        v = self.verdicts
        self.bar = (
            f"[{finished}/{total}] {run.name}: {run.result.termination.value}; {rate:.1f} rows/s, "
            f"ETA {duration((total - finished) / rate)}; "
            f"{v['holds']} hold, {v['failed']} fail, {v['undecided']} undecided"
        )
        return True

    def text(self, engine: str = "") -> str:
        elapsed = time.monotonic() - self.start
        return "  ".join(p for p in (self.bar, engine, f"(total {elapsed:.1f} s)") if p)


def engine_text(query: str, engine: str, state) -> str:
    """An engine's report while it works: bounds, gap, speed."""
    line = f"{query} ({engine}): [{_short(state.lower)}, {_short(state.upper)}]"
    if state.lower is not None and state.upper is not None:
        line += f" gap {_short(state.upper - state.lower)}"
    speed = getattr(state, "states_per_s", None)
    if speed:
        line += f"  {speed:,.0f} states/s"
    return line + f"  {state.time_s:.1f} s"


def duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds // 60:.0f} min {seconds % 60:02.0f} s"
    return f"{seconds // 3600:.0f} h {seconds % 3600 // 60:02.0f} min"


def _short(value: float | None) -> str:
    return "-" if value is None else f"{value:.5g}"
