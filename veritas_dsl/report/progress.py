"""The live progress line of ``ver run`` on a terminal, drawn by tqdm on stderr.

For a batch: rows done of the total, a bar, rows per second and the time left at that pace
(measured from the first row finished, see :class:`Pace`), the checks that hold, fail and are
undecided so far, and the last row finished; while an engine
works, its bounds follow. The same line shows steps of the library's long work (fitting or
editing DaRE forests, making a family of deletions) as they report them.

The line is as wide as the terminal (asked at each redraw, so it follows a resize); tqdm trims
it to that width, redraws it in place, rate-limits the redraws, and draws nothing when stderr is
not a terminal: a log or a pipe gets the report alone.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

from veritas_dsl.outcome import QueryRun

#: A batch: counts and bar, then the pace (:class:`Pace`) and what the postfix says.
BATCH = "{n_fmt}/{total_fmt} {bar:10}"
#: One query, or work that is not a batch of rows: what it says, and the time since the start.
SINGLE = "{desc}  ({elapsed})"


class Bar:
    """The progress of one run, fed each finished query and the engines' and library's reports.

    Parameters
    ----------
    enabled : bool
        False for machine output (``--json``); even when True, nothing is drawn unless
        ``stream`` is a terminal.
    stream : file, optional
        Where the line goes (stderr).
    """

    def __init__(
        self, enabled: bool, stream=None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.pace = Pace(clock)
        self.pace_text = ""
        self.enabled = enabled
        self.verdicts = {"holds": 0, "failed": 0, "undecided": 0}
        self.last = ""
        self.working = ""
        self.total = 0
        self._bar = None
        self._drawn = False

    def done(self, run: QueryRun, finished: int, total: int) -> None:
        """Count ``run``, the ``finished``-th of ``total`` queries and rows."""
        for check in run.checks:
            self.verdicts[{True: "holds", None: "undecided"}.get(check.holds, "failed")] += 1
        if total <= 1:
            return
        v = self.verdicts
        self.total = total
        # The tally first: the end of a line too long for the terminal is cut.
        self.last = f"{run.name}: {run.result.termination.value}"
        if sum(v.values()):
            tally = f"{v['holds']} hold, {v['failed']} fail, {v['undecided']} undecided"
            self.last = f"{tally}; {self.last}"
        self.working = ""
        self.pace_text = self.pace.text(finished, total)
        self._show(finished)

    def engine(self, query: str, engine: str, state) -> None:
        """An engine's report while it works (see :func:`engine_text`)."""
        self.working = engine_text(query, engine, state)
        self._show()

    def step(self, text: str) -> None:
        """A step of the library's long work (a forest fit, deletions, a family)."""
        self.working = text
        self._show()

    def _show(self, finished: int | None = None) -> None:
        text = "; ".join(t for t in (self.last, self.working) if t)
        columns, lines = size(self.stream)  # asked each time: the terminal may be resized
        if self._bar is None:
            self._bar = _line(self.stream, self.enabled, columns, lines)
        bar = self._bar
        bar.ncols, bar.nrows = columns, lines
        if self.total:
            pace = f" {self.pace_text}" if self.pace_text else ""
            bar.bar_format, bar.total = BATCH + pace + "{postfix}", self.total
            bar.set_postfix_str(text, refresh=False)
        else:
            bar.set_description_str(text, refresh=False)
        # An engine's report is drawn when the last redraw is old enough (tqdm's mininterval); a
        # finished row, and the first report, always.
        bar.update(0 if finished is None else finished - bar.n)
        if finished is not None or not self._drawn:
            bar.refresh()
            self._drawn = True

    def close(self) -> None:
        """Erase the line (before the report is printed); a later report draws a new one."""
        if self._bar is not None:
            self._bar.close()
        self._bar, self._drawn, self.working = None, False, ""


class Pace:
    """Rows per second and the time left, measured from the first row finished: what comes
    before it (a cluster starting, kernels compiling, models loading) is paid once and says
    nothing of the rows to come. Counted from the start instead, a 22 s batch of 200 rows
    behind a minute of start-up read "ETA 4:16:00" at its first row. Until a second row
    finishes there is no pace to tell, and no time left is shown."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.first: tuple[float, int] | None = None  # (time, rows finished) at the first

    def text(self, finished: int, total: int) -> str:
        """``12.5 row/s, ETA 00:16``; "" with no pace yet (``ETA 00:00`` once all are done)."""
        now = self.clock()
        if self.first is None:
            self.first = (now, finished)
        start, rows = self.first
        if finished <= rows or now <= start:
            return "ETA 00:00" if finished >= total else ""
        rate = (finished - rows) / (now - start)
        return f"{rate:.3g} row/s, ETA {_interval(max(total - finished, 0) / rate)}"


def _interval(seconds: float) -> str:
    from tqdm import tqdm

    return tqdm.format_interval(seconds)


def _line(stream, enabled: bool, columns: int, lines: int):
    from tqdm import tqdm  # only a run that shows progress pays for it

    class Line(tqdm):
        monitor_interval = 0  # no monitor thread: workers may be forked meanwhile

    return Line(
        file=stream,
        disable=None if enabled else True,  # None: drawn on a terminal only
        delay=1e-9,  # drawn once it has something to say (by _show), not blank at its start
        # redrawn by time alone (mininterval): tqdm's default adapts a count of rows between
        # redraws, and after a fast row no engine report (an update of 0 rows) was drawn again
        miniters=0,
        ncols=columns,
        nrows=lines,
        leave=False,
        unit="row",
        bar_format=SINGLE,
    )


def size(stream) -> tuple[int, int]:
    """The widest line ``stream``'s terminal shows without wrapping (one column spare: some
    terminals wrap on the last), and its number of lines; 80 x 24 where it tells none (a
    pseudo-terminal nobody sized reports 0 x 0, which tqdm would take for no room at all)."""
    try:
        columns, lines = os.get_terminal_size(stream.fileno())
    except (AttributeError, OSError, ValueError):  # not a terminal (then nothing is drawn)
        columns = lines = 0
    return (columns or 80) - 1, lines or 24


def engine_text(query: str, engine: str, state) -> str:
    """An engine's report while it works: bounds, gap, speed."""
    line = f"{query} ({engine}): [{_short(state.lower)}, {_short(state.upper)}]"
    if state.lower is not None and state.upper is not None:
        line += f" gap {_short(state.upper - state.lower)}"
    speed = getattr(state, "states_per_s", None)
    if speed:
        line += f"  {speed:,.0f} states/s"
    return line + f"  {state.time_s:.1f} s"


def _short(value: float | None) -> str:
    return "-" if value is None else f"{value:.5g}"
