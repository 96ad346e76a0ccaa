"""The time left of a batch is measured from its first finished row, on a clock moved by hand (no
waiting, no verdict from the machine's speed): a minute of start-up before the first row (a
cluster starting, kernels compiling) once read "ETA 4:16:00" for a batch of 22 s."""

from __future__ import annotations

import io
from types import SimpleNamespace

from veritas_dsl.report.progress import Bar, Pace


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def row(k: int):
    return SimpleNamespace(
        checks=[],
        name=f"q[{k}]",
        result=SimpleNamespace(termination=SimpleNamespace(value="optimal")),
    )


def test_the_pace_starts_at_the_first_row_and_tells_nothing_before_the_second():
    clock = [60.0]  # a minute of start-up before the first row
    pace = Pace(lambda: clock[0])
    assert pace.text(1, 200) == ""
    clock[0] = 60.1
    assert pace.text(2, 200) == "10 row/s, ETA 00:19"  # 198 rows at 10 a second
    clock[0] = 60.5
    assert pace.text(6, 200) == "10 row/s, ETA 00:19"
    clock[0] = 79.9
    assert pace.text(200, 200) == "10 row/s, ETA 00:00"
    assert Pace(lambda: 0.0).text(3, 3) == "ETA 00:00"  # all at once: no pace to tell


def test_the_drawn_line_shows_no_time_left_from_the_start_up():
    clock = [0.0]
    bar = Bar(True, Terminal(), clock=lambda: clock[0])
    bar.step("cluster: starting local:2")  # the line exists from the start-up on
    bar._bar._time = lambda: clock[0]  # tqdm's own clock too
    clock[0] = 60.0
    bar.done(row(0), 1, 200)
    first = bar.stream.getvalue().split("\r")[-1]
    assert first.startswith("1/200 ") and "ETA" not in first and "row/s" not in first
    for k in range(1, 5):
        clock[0] += 0.1
        bar.done(row(k), k + 1, 200)
    last = bar.stream.getvalue().split("\r")[-1]
    bar.close()
    assert last.startswith("5/200 ") and "10 row/s, ETA 00:19, q[4]: optimal" in last, last
